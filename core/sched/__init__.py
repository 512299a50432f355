"""Who runs: the policies, the one scheduling loop in named phases, its fast paths, and the Run it returns."""
