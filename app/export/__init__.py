"""`batchviz export`: the served page as one self-contained offline HTML page."""
