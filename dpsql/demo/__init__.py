"""The bundled demo: a synthetic `people` table and its policy, opened by `dpsql.connect()`."""
