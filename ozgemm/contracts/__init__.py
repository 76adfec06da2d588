"""Named precision contracts shipped as TOML files (package data)."""
