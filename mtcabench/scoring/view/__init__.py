"""One page for a whole run: every span of a benchmark with each submission's scores, filters,
and each span's gold and predicted graphs side by side (``mtcabench view``).

- :mod:`~mtcabench.scoring.view._data`: the run's document (spans, texts, per-span scores);
- :mod:`~mtcabench.scoring.view._site`: the static folder (page, script, data) it is written to;
- ``index.html``, ``view.css``, ``view.js``: the page, which draws the table and span pages
  from the document in the browser.
"""

from mtcabench.scoring.view._data import DATA_VERSION, view_data
from mtcabench.scoring.view._site import site_paths, write_site

__all__ = ["DATA_VERSION", "site_paths", "view_data", "write_site"]
