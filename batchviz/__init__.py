"""batchviz: the command line assembled from every part (core, replay, app); the parts live in their packages."""
