# Makes `tests` a regular package, so `tests.lib` cannot be shadowed by a
# `tests` package installed in site-packages. The test directories below it
# have no __init__.py on purpose (pytest imports their files by basename).
