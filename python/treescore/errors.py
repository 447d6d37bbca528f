"""Python exceptions for errors raised by treescore's JVM side."""
from contextlib import contextmanager


class InvalidModelError(ValueError):
    """The model text is not a well-formed LightGBM model; the message says where and why."""


_JAVA_TO_PYTHON = {
    "java.io.FileNotFoundException": FileNotFoundError,
    "treescore.model.InvalidModelException": InvalidModelError,
    "treescore.ensemble.InvalidSpecException": ValueError,
    "java.lang.IllegalArgumentException": ValueError,
}


def _java_exception(error: Exception):
    from py4j.protocol import Py4JJavaError

    # PySpark turns some Java exceptions (IllegalArgumentException and its subclasses among
    # them) into its own CapturedException before we see them; the original stays attached.
    if isinstance(error, Py4JJavaError):
        return error.java_exception
    return getattr(error, "_origin", None)


@contextmanager
def jvm_errors():
    """Re-raises treescore's JVM errors as the matching Python exception, with the JVM's message."""
    # Imported here, not at the top: a Spark Connect client has no py4j (see treescore._connect).
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except (Py4JJavaError, CapturedException) as error:
        java_error = _java_exception(error)
        python_type = _JAVA_TO_PYTHON.get(java_error.getClass().getName()) if java_error is not None else None
        if python_type is None:
            raise
        raise python_type(java_error.getMessage()) from None
