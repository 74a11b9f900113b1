"""Where c4jax's programs run and how they are compiled: the XLA settings
(:mod:`~c4jax.runtime.xla_flags`), the persistent compilation cache
(:mod:`~c4jax.runtime.cache`), devices, meshes and the compiled programs a
process keeps (:mod:`~c4jax.runtime.compiled`), and runs over several
processes (:mod:`~c4jax.runtime.distributed`).
"""
