"""Prompt templates: sandboxed Jinja2, literal dataset values, located errors, few-shot and chat inputs."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from eval_harness.errors import TemplateError
from eval_harness.templates import load_template
from eval_harness.types import ChatMessage, Sample


def write(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(body, encoding="utf-8")
    return path


def test_rendered_prompt_has_system_then_user_turn(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "Q: {{ input }}\n")
    template = load_template(tmp_path, "t.jinja2", system_prompt="Be brief.")
    messages = template.render(Sample(id="1", input="2+2?", target="4"))
    assert messages == [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Q: 2+2?")]


def test_template_sha256_is_of_the_source(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "{{ input }}")
    assert load_template(tmp_path, "t.jinja2").sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_dataset_text_with_template_syntax_is_inserted_literally(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "Q: {{ input }} / {{ metadata.note }}")
    sample = Sample(id="1", input="{{ 7 * 7 }} {% if true %}yes{% endif %}", target="x", metadata={"note": "{{ x }}"})
    (message,) = load_template(tmp_path, "t.jinja2").render(sample)
    assert message.content == "Q: {{ 7 * 7 }} {% if true %}yes{% endif %} / {{ x }}"


def test_undefined_variable_names_template_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "line one\n{{ input }}\n{{ missing_variable }}\n")
    template = load_template(tmp_path, "t.jinja2")
    with pytest.raises(TemplateError) as raised:
        template.render(Sample(id="1", input="a", target="b"))
    assert str(raised.value).startswith(f"{path}:3: UndefinedError: 'missing_variable' is undefined")


@pytest.mark.parametrize(
    "body",
    ["{{" + "(" * 100 + "1" + ")" * 100 + "}}", "{% if 1 %}" * 300 + "x" + "{% endif %}" * 300,
     "{{ input" + "|upper" * 3000 + " }}"],
)  # fmt: skip
def test_a_template_nested_past_the_parsers_reach_is_a_template_error(tmp_path: Path, body: str) -> None:
    # hostile-s33 1: Jinja's parser raised RecursionError, a traceback of run, --dry-run and validate-dataset
    path = write(tmp_path, "t.jinja2", body)
    with pytest.raises(TemplateError, match=f"^{path}: nested too deeply for Jinja to compile"):
        load_template(tmp_path, "t.jinja2")


def test_a_template_nested_too_deeply_is_named_when_another_includes_it(tmp_path: Path) -> None:
    # review2-s33 W1: the error named the including template
    inner = write(tmp_path, "inner.jinja2", "{{" + "(" * 100 + "1" + ")" * 100 + "}}")
    write(tmp_path, "t.jinja2", 'Q: {{ input }}\n{% include "inner.jinja2" %}\n')
    with pytest.raises(TemplateError, match=f"^{inner}: nested too deeply for Jinja to compile"):
        load_template(tmp_path, "t.jinja2")


def test_a_value_nested_past_strs_reach_is_a_template_error_at_its_line(tmp_path: Path) -> None:
    # hostile-s33 2: "{{ metadata }}" of metadata 1,000 levels deep (which a dataset may hold) was a traceback
    path = write(tmp_path, "t.jinja2", "{{ input }}\n{{ metadata }}\n")
    nested: dict[str, object] = {"a": 1}
    for _ in range(1000):
        nested = {"a": nested}
    with pytest.raises(TemplateError, match=f"^{path}:2: RecursionError"):
        load_template(tmp_path, "t.jinja2").render(Sample(id="1", input="q", target="t", metadata=nested))


def test_a_misspelt_variable_gets_the_near_name_and_every_variable(tmp_path: Path) -> None:
    # adopt-s32 10: "'inputs' is undefined" and nothing more, where a misspelt scorer or key gets "did you mean"
    path = write(tmp_path, "t.jinja2", "Q: {{ inputs }}\n")
    with pytest.raises(TemplateError) as raised:
        load_template(tmp_path, "t.jinja2", variables={"cot": True}).render(Sample(id="1", input="a", target="b"))
    assert str(raised.value) == (
        f"{path}:1: UndefinedError: 'inputs' is undefined (did you mean 'input'? the variables: input, sample, target, "
        "choices, letters, examples, metadata, cot)"
    )


def test_a_key_the_metadata_lacks_is_told_with_what_it_holds(tmp_path: Path) -> None:
    # adopt-s32 3: GSM8K's answer, mapped to target, is not in metadata (target_raw is): the error said only
    # "'dict object' has no attribute 'answer'"
    path = write(tmp_path, "t.jinja2", "{% for e in examples %}{{ e.metadata.answer }}\n{% endfor %}{{ input }}\n")
    example = Sample(id="e1", input="x", target="18", metadata={"target_raw": "so 18 #### 18", "level": 2})
    with pytest.raises(TemplateError) as raised:
        load_template(tmp_path, "t.jinja2").render(Sample(id="1", input="a", target="b"), [example])
    assert str(raised.value) == (
        f"{path}:1: UndefinedError: 'dict object' has no attribute 'answer' (if that is metadata: the example's "
        "metadata holds level, target_raw) (in few-shot example 'e1')"
    )


def test_syntax_error_names_template_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "ok\n{% for x in %}\n{% endfor %}\n")
    with pytest.raises(TemplateError, match=rf"^{path}:2: "):
        load_template(tmp_path, "t.jinja2")


def test_missing_template_lists_the_ones_available(tmp_path: Path) -> None:
    write(tmp_path, "other.jinja2", "x")
    with pytest.raises(TemplateError, match=r"template not found \(templates here: other.jinja2\)"):
        load_template(tmp_path, "nope.jinja2")


def test_sandbox_blocks_access_to_python_internals(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "{{ input.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(TemplateError, match=r"SecurityError|UndefinedError"):
        load_template(tmp_path, "t.jinja2").render(Sample(id="1", input="a", target="b"))


def test_few_shot_examples_and_choices_are_available(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.jinja2",
        "{% for e in examples %}{{ e.input }} -> {{ e.target }}\n{% endfor %}"
        "{{ input }}\n{% for c in choices %}{{ letters[loop.index0] }}. {{ c }}\n{% endfor %}",
    )
    template = load_template(tmp_path, "t.jinja2")
    shots = [Sample(id="s1", input="1+1", target="2"), Sample(id="s2", input="2+2", target="4")]
    (message,) = template.render(Sample(id="1", input="Pick", target="B", choices=["x", "y"]), shots)
    assert message.content == "1+1 -> 2\n2+2 -> 4\nPick\nA. x\nB. y"


def test_chain_of_thought_and_xml_switches_come_from_task_variables(tmp_path: Path) -> None:
    write(
        tmp_path, "t.jinja2", "{{ input }}\n{% if cot %}Think step by step.{% endif %}{% if xml %}<answer>{% endif %}"
    )
    plain = load_template(tmp_path, "t.jinja2", variables={"cot": False, "xml": False})
    both = load_template(tmp_path, "t.jinja2", variables={"cot": True, "xml": True})
    sample = Sample(id="1", input="Q", target="A")
    assert plain.render(sample)[0].content == "Q"
    assert both.render(sample)[0].content == "Q\nThink step by step.<answer>"


def test_chat_input_keeps_history_and_templates_the_last_turn(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "[{{ input }}]")
    sample = Sample(
        id="1",
        input=[
            ChatMessage(role="user", content="hi"),
            ChatMessage(role="assistant", content="hello"),
            ChatMessage(role="user", content="question"),
        ],
        target="x",
    )
    messages = load_template(tmp_path, "t.jinja2", system_prompt="S").render(sample)
    assert [(m.role, m.content) for m in messages] == [
        ("system", "S"),
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "[question]"),
    ]


def test_builtin_templates_render_the_builtin_tasks() -> None:
    from eval_harness.planning import plan_run  # noqa: F401  (import check: templates load through planning)
    from eval_harness.tasks import find_task

    for name in ("capability_profile", "math_cot"):
        task = find_task(name)
        template = load_template(
            task.templates_dir, task.spec.template, task.spec.system_prompt, task.spec.template_vars
        )
        messages = template.render(Sample(id="1", input="What is 2 + 2?", target="4"))
        assert "What is 2 + 2?" in messages[-1].content


def test_a_python_error_inside_a_template_is_a_template_error_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "ok\n{{ input + 1 }}\n")
    with pytest.raises(TemplateError, match=rf"^{path}:2: TypeError"):
        load_template(tmp_path, "t.jinja2").render(Sample(id="1", input="a", target="b"))


def test_jinja_globals_such_as_range_stay_available(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "{% for i in range(3) %}{{ i }}{% endfor %} {{ input }}")
    (message,) = load_template(tmp_path, "t.jinja2").render(Sample(id="1", input="a", target="b"))
    assert message.content == "012 a"


@pytest.mark.parametrize(
    "body",
    [
        "{{ input }}\nReply with the answer only.\n",
        "Q: {{input}} -> {{ target }} {{ choices }} {{ letters }} {{ metadata }}\n\n",
        "  {{ input }}  {{ input }}",
        "no variables at all\n",
        "{{ input }}\r\nReply.\r\n",  # Jinja turns every line break into \n
        "{{input}}{{ target }}\n\n\n",
        "a }} b {{ input }} c",
        "{{ input }}\n{{ style }}",
    ],
)
def test_a_plain_template_renders_as_jinja_would(tmp_path: Path, body: str) -> None:
    # Text-and-names templates are recognised without Jinja and skip its render machinery; the text must be
    # the same to the character.
    write(tmp_path, "t.jinja2", body)
    fast = load_template(tmp_path, "t.jinja2", variables={"style": "x"})
    assert fast._plain is not None and fast._template is None  # Jinja was not needed to load it
    slow = load_template(tmp_path, "t.jinja2", variables={"style": "x"})
    object.__setattr__(slow, "_plain", None)
    samples = [
        Sample(id="1", input="{{ 7 * 7 }}\n", target="49"),
        Sample(id="3", input="{{ 7 * 7 }}\r\nsecond line", target="49"),
        Sample(id="2", input="Pick one", target="B", choices=["a", "b"], metadata={"k": [1, None]}),
    ]
    for sample in samples:
        assert fast.render(sample) == slow.render(sample)


def test_templates_with_logic_or_filters_take_jinja_s_path(tmp_path: Path) -> None:
    for body in ("{{ input | upper }}", "{% if input %}{{ input }}{% endif %}", "{{ metadata.k }}", "{{ 1 + 1 }}"):
        write(tmp_path, "t.jinja2", body)
        assert load_template(tmp_path, "t.jinja2")._plain is None


@pytest.mark.parametrize("body", ["{{ true }}", "{{ input }} {{- target }}", "{# note #}{{ input }}"])
def test_sources_that_only_look_plain_take_jinja_s_path(tmp_path: Path, body: str) -> None:
    write(tmp_path, "t.jinja2", body)
    template = load_template(tmp_path, "t.jinja2")
    assert template._plain is None and template._template is not None


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("{{ input }} {{", "unexpected 'end of template'"),
        ("{{{ input }}}", "expected token ':', got '}'"),
        ("{{ not }}", "unexpected 'end of print statement'"),
    ],
)
def test_sources_that_only_look_plain_but_are_not_jinja_are_refused_at_load(
    tmp_path: Path, body: str, why: str
) -> None:
    path = write(tmp_path, "t.jinja2", body)
    with pytest.raises(TemplateError) as refused:
        load_template(tmp_path, "t.jinja2")
    assert str(refused.value) == f"{path}:1: {why}"


def test_a_plain_template_in_a_subfolder_reports_a_missing_name_through_jinja(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = write(tmp_path, "sub/t.jinja2", "{{ input }}\n{{ nowhere }}\n")
    template = load_template(tmp_path, "sub/t.jinja2")
    assert template._plain is not None
    with pytest.raises(TemplateError, match=rf"{path}:2: UndefinedError: 'nowhere' is undefined"):
        template.render(Sample(id="1", input="a", target="b"))


def test_a_plain_template_keeps_the_hashed_text_when_its_file_changes_or_goes(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "{{ input }}\n{{ nowhere }}\n")
    template = load_template(tmp_path, "t.jinja2")
    path.write_text("EDITED {{ input }}\n")  # the run recorded the sha256 of the first text
    with pytest.raises(TemplateError, match=r"t\.jinja2:2: UndefinedError: 'nowhere' is undefined"):
        template.render(Sample(id="1", input="a", target="b"))
    path.unlink()
    with pytest.raises(TemplateError, match="'nowhere' is undefined"):
        template.render(Sample(id="2", input="a", target="b"))


def test_copies_with_other_variables_share_nothing_with_the_original(tmp_path: Path) -> None:
    # The judge renders its template with per-call variables through dataclasses.replace.
    write(tmp_path, "t.jinja2", "{% if extra is defined %}{{ extra }} {% endif %}{{ input }}")
    template = load_template(tmp_path, "t.jinja2")
    sample = Sample(id="1", input="a", target="b")
    assert dataclasses.replace(template, variables={"extra": "E"}).render(sample)[-1].content == "E a"
    assert template.render(sample)[-1].content == "a"


def test_the_context_names_are_those_template_vars_may_not_take(tmp_path: Path) -> None:
    # types.TEMPLATE_SAMPLE_VARIABLES refuses these in a task's template_vars: each must be a name render sets,
    # to the sample's own value. For each name, an expression over it and what it gives for this sample:
    from eval_harness.types import TEMPLATE_SAMPLE_VARIABLES

    expected = {
        "input": ("input", "q"),
        "sample": ("sample.id", "s"),
        "target": ("target", "a"),
        "choices": ("choices | join(',')", "x,y"),
        "letters": ("letters", "AB"),
        "examples": ("examples | length", "0"),
        "metadata": ("metadata.k", "v"),
    }
    assert set(expected) == set(TEMPLATE_SAMPLE_VARIABLES) and len(TEMPLATE_SAMPLE_VARIABLES) == len(expected)
    names = sorted(expected)
    write(tmp_path, "all.jinja2", "|".join(f"{{{{ {expected[name][0]} }}}}" for name in names))
    sample = Sample(id="s", input="q", target="a", choices=["x", "y"], metadata={"k": "v"})
    rendered = load_template(tmp_path, "all.jinja2").render(sample)
    assert rendered[-1].content == "|".join(expected[name][1] for name in names)


@pytest.mark.parametrize("name", ["../.env", "/etc/hostname", "sub/../../x.jinja2"])
def test_a_template_outside_the_templates_directory_is_refused(tmp_path: Path, name: str) -> None:
    # before: template = "../.env" in a task spec put the file's keys into every prompt (and the records)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-canary-tmpl-0001\n")
    templates = tmp_path / "templates"
    templates.mkdir()
    with pytest.raises(TemplateError, match=r"a template is a file in .* \(no absolute path, no '\.\.'\)") as caught:
        load_template(templates, name)
    assert "sk-canary" not in str(caught.value)


def test_a_template_in_a_subdirectory_of_templates_still_loads(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "t.jinja2").write_text("Q: {{ input }}\n")
    assert load_template(tmp_path, "mine/t.jinja2").render(Sample(id="s", input="x", target="y"))[-1].content == "Q: x"


SAMPLE = Sample(id="1", input="2+2?", target="4")


def test_included_templates_are_read_once_and_hashed_with_the_template(tmp_path: Path) -> None:
    # An included file is pinned when the template is loaded, and its text is part of the template's sha256: an
    # edit during the run cannot change the prompts half-way, and one before a resume is a changed template.
    write(tmp_path, "t.jinja2", '{% include "sub/part.jinja2" %} {{ input }}')
    part = write(tmp_path / "sub", "part.jinja2", "{% import 'macros.jinja2' as m %}{{ m.ask() }}")
    write(tmp_path, "macros.jinja2", "{% macro ask() %}Answer:{% endmacro %}")
    template = load_template(tmp_path, "t.jinja2")
    assert template.includes == ("macros.jinja2", "sub/part.jinja2")
    part.write_text("EDITED {{ input }}", encoding="utf-8")
    assert template.render(SAMPLE)[-1].content == "Answer: 2+2?"
    reloaded = load_template(tmp_path, "t.jinja2")
    assert reloaded.sha256 != template.sha256
    assert reloaded.render(SAMPLE)[-1].content == "EDITED 2+2? 2+2?"


def test_a_template_without_includes_keeps_the_digest_of_its_file(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jinja2", "{% if input %}{{ input }}{% endif %}")
    template = load_template(tmp_path, "t.jinja2")
    assert template.includes == ()
    assert template.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_include_is_named_from_the_templates_directory(tmp_path: Path) -> None:
    write(tmp_path / "sub", "t.jinja2", '{% include "part.jinja2" %}')
    write(tmp_path / "sub", "part.jinja2", "x")
    with pytest.raises(TemplateError) as raised:
        load_template(tmp_path, "sub/t.jinja2")
    assert str(raised.value) == (
        f"{tmp_path / 'sub' / 't.jinja2'}: includes 'part.jinja2', but {tmp_path / 'part.jinja2'} does not exist "
        f"(included names are relative to {tmp_path}, not to the including file)"
    )


def test_an_include_named_by_an_expression_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", "{% include metadata.part %}")
    with pytest.raises(TemplateError, match=r"t\.jinja2: includes, extends or imports a template named by an expr"):
        load_template(tmp_path, "t.jinja2")


def test_an_include_outside_the_templates_directory_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", '{% include "../secret.txt" %}')
    (tmp_path.parent / "secret.txt").write_text("KEY", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"includes '\.\./secret\.txt', but a template is a file in"):
        load_template(tmp_path, "t.jinja2")


def test_a_syntax_error_in_an_included_template_names_its_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "t.jinja2", '{% include "part.jinja2" %}')
    part = write(tmp_path, "part.jinja2", "ok\n{% if %}\n")
    with pytest.raises(TemplateError, match=rf"^{part}:2: "):
        load_template(tmp_path, "t.jinja2")


@pytest.mark.parametrize("included", [False, True])
def test_a_symbolic_link_out_of_the_templates_directory_is_refused(tmp_path: Path, included: bool) -> None:
    templates = tmp_path / "templates"
    secret = write(tmp_path, "secret.env", "OPENAI_API_KEY=sk-canary")
    write(templates, "t.jinja2", '{% include "link.jinja2" %}')
    (templates / "link.jinja2").symlink_to(secret)
    with pytest.raises(TemplateError) as raised:
        load_template(templates, "t.jinja2" if included else "link.jinja2")
    assert str(raised.value).startswith(f"{templates / 'link.jinja2'}: a symbolic link to {secret}, outside")


def test_a_symbolic_link_inside_the_templates_directory_is_followed(tmp_path: Path) -> None:
    write(tmp_path / "v2", "t.jinja2", "Q: {{ input }}")
    (tmp_path / "current.jinja2").symlink_to(tmp_path / "v2" / "t.jinja2")
    assert load_template(tmp_path, "current.jinja2").render(SAMPLE)[-1].content == "Q: 2+2?"


def test_a_template_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe.jinja2")  # reading it would wait for a writer forever
    with pytest.raises(TemplateError, match=r"pipe\.jinja2: not a regular file"):
        load_template(tmp_path, "pipe.jinja2")


def test_a_template_with_a_byte_order_mark_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja2"
    path.write_bytes(b"\xef\xbb\xbf{{ input }}\n")
    with pytest.raises(TemplateError, match=rf"^{path}:1: starts with a UTF-8 byte-order mark"):
        load_template(tmp_path, "t.jinja2")


def test_a_template_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja2"
    path.write_bytes(b"line one\nline two caf\xe9 {{ input }}\n")
    expected = rf"^{path}:2: not UTF-8 text \(invalid continuation byte at byte offset 21\)"
    with pytest.raises(TemplateError, match=expected):
        load_template(tmp_path, "t.jinja2")


def test_a_crlf_template_keeps_the_digest_of_its_text_with_newlines(tmp_path: Path) -> None:
    # review-s30 1: the bytes were hashed as stored, so every run of a CRLF template made before was "changed"
    (tmp_path / "t.jinja2").write_bytes(b"Question: {{ input }}\r\nAnswer:\r\n")
    template = load_template(tmp_path, "t.jinja2")
    assert template.sha256 == hashlib.sha256(b"Question: {{ input }}\nAnswer:\n").hexdigest()
    assert template.render(SAMPLE)[-1].content == "Question: 2+2?\nAnswer:"


def test_include_ignore_missing_and_a_list_of_names_take_the_files_that_exist(tmp_path: Path) -> None:
    # review-s30 3: every literal name had to exist, so Jinja's optional forms were refused
    write(tmp_path, "t.jinja2", '{% include "gone.jinja2" ignore missing %}{% include ["no.jinja2", "p.jinja2"] %}')
    write(tmp_path, "p.jinja2", "P {{ input }}")
    template = load_template(tmp_path, "t.jinja2")
    assert template.includes == ("p.jinja2",)
    assert template.render(SAMPLE)[-1].content == "P 2+2?"


def test_a_run_recorded_before_includes_were_hashed_keeps_its_digest(tmp_path: Path) -> None:
    # review-s30 2: its resume needed --force and its rescore was refused, nothing having changed
    path = write(tmp_path, "t.jinja2", '{% include "p.jinja2" %}')
    write(tmp_path, "p.jinja2", "P {{ input }}")
    template = load_template(tmp_path, "t.jinja2")
    legacy = hashlib.sha256(path.read_bytes()).hexdigest()
    assert template.sha256 != legacy and template.as_recorded(legacy, None).sha256 == legacy
    assert template.as_recorded(template.sha256, None) is template
    assert template.as_recorded("0" * 64, None) is template  # another digest: a change, told as such
    assert template.as_recorded(legacy, []) is template  # a run that recorded its includes (none then): a change
