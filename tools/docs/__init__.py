"""The documentation site's build helpers: the reference pages generated from the code
(``reference.py`` is the mkdocs hook) and the benchmark tables (``benchmarks.py``)."""
