"""The package version, in the ground layer: every layer reads it from here, and the root
package re-exports it (the root itself exposes functions of the top layer, so no stage may
import it)."""

__version__ = "0.1.0"
