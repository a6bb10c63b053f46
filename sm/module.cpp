// madengine_sm: module anchor (see README.md); real sources land beside it.
