"""``python -m eval_harness`` runs the CLI."""

from eval_harness.cli.launch import run

run()
