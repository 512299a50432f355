"""The Schedulers tab: real engines' schedulers on one traffic, pool and clock, guessed, then compared."""
