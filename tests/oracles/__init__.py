"""Python builders of what the page draws in JavaScript: the oracles the page's modules are tested against."""
