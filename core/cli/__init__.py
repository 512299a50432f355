"""The core's command line (simulate, compare, sweep): argument types, flag groups and text or JSON reports."""
