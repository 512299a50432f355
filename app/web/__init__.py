"""The page's web assets (ES modules, CSS, the view schema) as package data, and the code that reads them."""
