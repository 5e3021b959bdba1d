"""``python -m eval_harness`` runs the CLI."""

from eval_harness.cli.app import run_process

run_process()
