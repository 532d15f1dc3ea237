"""weft: lazy arrays and streams that work from any thread.

``weft.core`` mirrors ``mlx.core``::

    import weft.core as mx
"""

from weft import core

__all__ = ["core"]
__version__ = core.__version__
