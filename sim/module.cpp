// madengine_sim: module anchor (see README.md); real sources land beside it.
