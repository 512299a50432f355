"""What every tab of the page shares: deep links, uploads, words, colours, stores and the lazily built tab."""
