// madengine_sa: module anchor (see README.md); real sources land beside it.
