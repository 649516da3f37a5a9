"""The ``metacortex`` command line (entry point: ``metacortex.cli.main:main``)."""
