"""CSS and JavaScript served by the app (a package only so that they install with it)."""
