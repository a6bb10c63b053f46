// madengine_engine: module anchor (see README.md); real sources land beside it.
