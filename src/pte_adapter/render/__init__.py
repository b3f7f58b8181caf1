"""Model Explorer graphs and text/JSON reports over the analysed program."""
