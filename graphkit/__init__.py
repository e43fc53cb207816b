"""graphkit: context graphs of AI agent sessions.

The pipeline reads in one direction, and so does the package:
``sources`` → ``contract`` → ``stores`` → ``queries`` → ``snapshot`` → ``cli``.
"""

__version__ = "0.1.0"
