"""`subcog-store ui`: a local page to browse, search and fix what is stored (see `ui.app`)."""
