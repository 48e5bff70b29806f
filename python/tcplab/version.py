"""tcplab's version: the one place it is written (``pyproject.toml`` repeats it for the
package metadata). ``tcplab.__version__`` re-exports it; modules of tcplab import it from
here, never from the ``tcplab`` facade (which imports nothing when it is imported).

Floor 0 (a leaf): imports nothing.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
