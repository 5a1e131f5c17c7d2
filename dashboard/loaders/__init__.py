"""Cached loaders: every number a page shows comes from here, computed by ``store``'s queries
(SQL) and ``analytics`` (pandas). ``shared``: the frames and settings every page reads; one
module per page for the rest."""
