"""Serving a class: the nginx site file for K `batchviz serve` workers, and a loopback launcher that tests it."""
