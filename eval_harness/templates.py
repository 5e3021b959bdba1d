"""Prompt templates: Jinja2 in a sandbox with ``StrictUndefined``; the only module that imports jinja2.

A template renders the user turn of the prompt. Dataset values are passed as variables, never as template
source, so a sample containing ``{{ ... }}`` is inserted literally.

A *plain* template, text and ``{{ name }}`` references only (most answer-only prompts), is recognised
without Jinja and rendered by joining strings; Jinja is imported (~30 ms) and the template compiled only
for any other template, or when a plain one meets a name it cannot fill (for Jinja's own error).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
import string
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from eval_harness.errors import TemplateError
from eval_harness.textfiles import NotUtf8Error, near_name, utf8_text
from eval_harness.types import TEMPLATE_SAMPLE_VARIABLES, ChatMessage, Sample, stays_inside

if TYPE_CHECKING:
    import jinja2


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template with the sha256 of its source (and of those of the templates it includes, extends or
    imports, read with it and pinned: an edit made during the run or before its resume is a changed template),
    ready to render samples into chat messages."""

    name: str
    path: Path
    sha256: str
    system_prompt: str | None
    variables: dict[str, Any]
    _template: jinja2.Template | None
    _directory: Path  # where its includes are named from; ``path`` is ``_directory / name``
    _plain: list[tuple[bool, str]] | None = None
    _source: str = ""  # the text that was hashed: a plain template compiled later compiles this, not the file
    includes: tuple[str, ...] = ()
    """The templates it includes, extends or imports (directly or through another), as named from ``_directory``."""
    example_sources: Mapping[str, str] = field(default_factory=dict)
    """Where each few-shot example comes from (example id -> ``file:line``), for an error that one of them causes."""
    # Built for each instance (also by ``dataclasses.replace``), never shared between copies:
    _example_cache: dict[tuple[str, ...], list[dict[str, Any]]] = field(default_factory=dict, init=False)
    _system: ChatMessage | None = field(default=None, init=False)
    _base: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._base.update(self.variables)
        if self._template is not None:
            self._adopt(self._template)
        if self.system_prompt:
            object.__setattr__(self, "_system", ChatMessage(role="system", content=self.system_prompt))

    @property
    def file_sha256(self) -> str:
        """The sha256 of its own file alone: what runs recorded before included templates were hashed."""
        return _digest(self._source, {})

    def as_recorded(self, recorded: str, recorded_includes: Sequence[str] | None) -> PromptTemplate:
        """This template as a run recorded it (its ``template_sha256`` and ``template_includes``): a run made
        before included templates were hashed (no ``recorded_includes``) recorded its own file's digest alone,
        and keeps it (it resumes and rescores as it was); otherwise itself, whose digest then tells whether
        anything changed (a later run whose optional include was absent recorded the main file's digest too, and
        an include that appeared since is a change)."""
        if recorded_includes is None and self.includes and recorded == self.file_sha256 != self.sha256:
            return dataclasses.replace(self, sha256=recorded)
        return self

    def render(self, sample: Sample, examples: Sequence[Sample] = ()) -> list[ChatMessage]:
        """The chat messages for ``sample``: system prompt, earlier turns of a chat input, the rendered turn."""
        history = [] if isinstance(sample.input, str) else list(sample.input[:-1])
        context = {**self._base, **_example(sample), "sample": sample, "examples": self._examples(examples)}
        text = _plain_render(self._plain, context) if self._plain is not None else None
        if text is None:
            text = self._render_jinja(context, examples)
        messages: list[ChatMessage] = []
        if self._system is not None:
            messages.append(self._system)
        messages.extend(m for m in history if m.role != "system" or not self.system_prompt)
        content = text.strip()
        if not content:  # every provider refuses an empty turn (a hosted API bills a run of 400s for it)
            raise TemplateError(f"{self.path}: renders an empty prompt for sample {sample.id!r}", sample_named=True)
        messages.append(ChatMessage(role="user", content=content))
        return messages

    def _render_jinja(self, context: dict[str, Any], examples: Sequence[Sample]) -> str:
        template = self._template
        if template is None:  # a plain template that met a name it cannot fill: Jinja says what is wrong
            template, _ = _compile(self._directory, self.name, self.path, self._source)
            self._adopt(template)
            context = {**self._base, **context}
        try:
            return "".join(template.root_render_func(template.new_context(context, shared=True)))
        except Exception:
            # read before Jinja rewrites the traceback: its frames hold the values the template was looking at
            culprit = _example_at_fault(sys.exc_info()[2], context["examples"], examples)
            try:
                template.environment.handle_exception()  # re-raises with the traceback mapped to template lines
            except Exception as exc:  # any error inside a template is the template's error, never a traceback
                hint = _undefined_hint(exc, [*TEMPLATE_SAMPLE_VARIABLES, *self.variables], context["metadata"], culprit)
                message = _located(exc, self.path) + hint + self._example_text(culprit)
                raise TemplateError(message, sample_named=culprit is not None) from None
            raise

    def _example_text(self, example: Sample | None) -> str:
        """What an error caused by a few-shot example adds to the message: the example and where it comes from
        (the template is the same for every example: the line alone does not say which one lacks a field)."""
        if example is None:
            return ""
        source = self.example_sources.get(example.id)
        return f" (in few-shot example {example.id!r}{f', {source}' if source else ''})"

    def _adopt(self, template: jinja2.Template) -> None:
        object.__setattr__(self, "_template", template)
        # Jinja merges its globals into every render's context; merging them once here and rendering with a
        # shared context halves the cost of a render, which runs once per sample.
        self._base.update(template.globals, **self.variables)

    def _examples(self, examples: Sequence[Sample]) -> list[dict[str, Any]]:
        # A run renders every prompt with the same examples: build their variables once, not per sample.
        key = tuple(e.id for e in examples)
        cached = self._example_cache.get(key)
        if cached is None:
            cached = self._example_cache[key] = [_example(e) for e in examples]
        return cached


_REFERENCE = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")
# Names Jinja reads as constants or operators, never as variables.
_JINJA_WORDS = frozenset(
    {"true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else"}
)


def _plain_parts(source: str) -> list[tuple[bool, str]] | None:
    """A template made only of text and ``{{ name }}`` references, as ``(is_text, text_or_name)`` parts;
    None for any other template (or one this cannot be sure of: then Jinja decides).

    Such a template renders by joining strings, ~20x faster than through Jinja's render machinery (which
    builds a context object and a generator per render); the output is the same, ``str()`` of each value.
    Recognised by hand, not by Jinja's parser, so that such a run never imports Jinja: no block or comment
    tags, no other ``{{``, and text with Jinja's newline normalisation (every line break becomes ``\\n``).
    """
    if "{%" in source or "{#" in source:
        return None
    parts: list[tuple[bool, str]] = []
    position = 0
    for reference in _REFERENCE.finditer(source):
        text = source[position : reference.start()]
        if "{{" in text or text.endswith("{") or reference.group(1) in _JINJA_WORDS:
            return None  # "{{{ x }}}" is "{{" then "{ x }" to Jinja: a syntax error, not "{" + x
        if text:
            parts.append((True, text))
        parts.append((False, reference.group(1)))
        position = reference.end()
    rest = source[position:]
    if "{{" in rest:
        return None
    if rest.endswith("\n"):  # keep_trailing_newline=False: Jinja drops one final line break
        rest = rest[:-1]
    if rest:
        parts.append((True, rest))
    return [
        (True, value.replace("\r\n", "\n").replace("\r", "\n")) if is_text else (False, value)
        for is_text, value in parts
    ]


def _plain_render(parts: list[tuple[bool, str]], context: dict[str, Any]) -> str | None:
    """The text of a plain template; None when a name is missing (Jinja's path then raises its error)."""
    try:
        return "".join([value if is_text else str(context[value]) for is_text, value in parts])
    except (KeyError, RecursionError):  # RecursionError: a value nested past str()'s reach, which Jinja then locates
        return None


_LOOP_VARIABLE = re.compile(r"l_[1-9][0-9]*_")
"""How Jinja's compiled code names a variable bound inside a ``for`` loop (depth 1 and deeper)."""


def _example_at_fault(
    tb: TracebackType | None, variables: list[dict[str, Any]], examples: Sequence[Sample]
) -> Sample | None:
    """The few-shot example whose rendering raised, found by identity in the failing frames: the example (or its
    ``metadata`` or ``choices``) on which a missing attribute was looked up (StrictUndefined's error), else the
    example a ``for`` loop of the template was at. None when the error is not an example's."""
    if not examples:
        return None
    import jinja2

    looped_over = {id(values): example for values, example in zip(variables, examples, strict=True)}
    looked_up = {**looped_over}
    for values, example in zip(variables, examples, strict=True):
        looked_up.update({id(values["metadata"]): example, id(values["choices"]): example})
    at_loop: Sample | None = None
    while tb is not None:
        frame_locals = tb.tb_frame.f_locals
        owner = frame_locals.get("self")
        if isinstance(owner, jinja2.Undefined) and id(owner._undefined_obj) in looked_up:
            return looked_up[id(owner._undefined_obj)]
        for name, value in frame_locals.items():
            if _LOOP_VARIABLE.match(name) and id(value) in looped_over:
                at_loop = looped_over[id(value)]
        tb = tb.tb_next
    return at_loop


def _example(sample: Sample) -> dict[str, Any]:
    choices = sample.choices or []
    return {
        "input": sample.input if isinstance(sample.input, str) else sample.input[-1].content,
        "target": sample.targets[0],
        "choices": choices,
        "letters": string.ascii_uppercase[: len(choices)],
        "metadata": sample.metadata,
    }


def load_template(
    directory: Path,
    name: str,
    system_prompt: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    example_sources: Mapping[str, str] | None = None,
    elsewhere: Path | None = None,
) -> PromptTemplate:
    """Load ``directory/name``; a syntax error names the file and line. ``example_sources`` (few-shot example id
    -> ``file:line``) lets an error an example causes name it; ``elsewhere``: the same template in another task
    root, named when this one is not found (a task copied out of the built-ins keeps naming theirs).

    ``name`` must stay inside ``directory``: a task spec's ``template = "../.env"`` (or an absolute path) would
    otherwise put any readable file, keys included, into every prompt sent to the provider."""
    path = directory / name
    source = _read(directory, name, elsewhere=elsewhere)
    plain = _plain_parts(source)
    template, included = (None, {}) if plain is not None else _compile(directory, name, path, source)
    return PromptTemplate(
        name=name,
        path=path,
        sha256=_digest(source, included),
        system_prompt=system_prompt,
        variables=dict(variables or {}),
        _template=template,
        _plain=plain,
        _directory=directory,
        _source=source,
        includes=tuple(sorted(included)),
        example_sources=dict(example_sources or {}),
    )


def _digest(source: str, included: Mapping[str, str]) -> str:
    """The sha256 of a template's source, and with includes of each included name and source too (a template
    without any keeps the digest of its file alone, which runs made before includes were hashed recorded)."""
    digest = hashlib.sha256(source.encode("utf-8"))
    for name in sorted(included):
        digest.update(f"\0{name}\0{included[name]}".encode())
    return digest.hexdigest()


def _read(directory: Path, name: str, *, elsewhere: Path | None = None, included_by: Path | None = None) -> str:
    """The text of template ``name`` of ``directory``, which must be a UTF-8 file inside it: not through an
    absolute path, '..' or a symbolic link leading out (a cloned task root's ``templates/x -> ~/.env`` would put
    the key into every prompt), not a pipe (whose read would wait forever), without a byte-order mark (which
    would open every prompt with an invisible U+FEFF)."""
    by = f"{included_by}: includes {name!r}, but " if included_by is not None else f"template {name!r}: "
    path = directory / name
    if not stays_inside(name):
        raise TemplateError(
            f"{by}a template is a file in {directory} (no absolute path, no '..'); it would otherwise read any file "
            "into the prompts"
        )
    try:
        resolved, inside = path.resolve(strict=True), directory.resolve()
    except FileNotFoundError:
        if included_by is not None:
            raise TemplateError(
                f"{by}{path} does not exist (included names are relative to {directory}, not to the including file)"
            ) from None
        known = sorted(p.name for p in directory.glob("*.jinja2"))
        listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "") or "none"
        close = near_name(Path(name).name, known)
        hint = f"; did you mean {close!r}?" if close else ""
        hint += f"; there is {elsewhere}: copy it to {directory}" if elsewhere is not None else ""
        raise TemplateError(f"{path}: template not found (templates here: {listed}){hint}", not_found=True) from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop
        raise TemplateError(f"{path}: cannot read the template: {exc}") from None
    if not resolved.is_relative_to(inside):
        raise TemplateError(
            f"{path}: a symbolic link to {resolved}, outside {directory}; a template must be a file in it (the "
            "link would read any file into the prompts)"
        )
    if not resolved.is_file():
        raise TemplateError(f"{path}: not a regular file (a template is a text file)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read the template: {exc}") from None
    try:  # read as read_text reads it: the text hashed since the first release, and the one Jinja renders
        source = utf8_text(data)
    except NotUtf8Error as exc:
        raise TemplateError(
            f"{path}:{exc.line}: not UTF-8 text ({exc.reason} at byte offset {exc.offset:,}); save it as UTF-8"
        ) from None
    if source.startswith("\ufeff"):
        raise TemplateError(
            f"{path}:1: starts with a UTF-8 byte-order mark, which every prompt would begin with; save it without BOM"
        )
    return source


def _compile(directory: Path, name: str, path: Path, source: str) -> tuple[jinja2.Template, dict[str, str]]:
    """Jinja's compiled template of ``source`` (the text that was hashed, so the prompt always matches the
    recorded sha256) and the sources of the templates it includes, extends or imports, read now and served
    from memory from then on (Jinja would read each file again whenever it changed); a syntax error in any of
    them names its file and line."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    sources: dict[str, tuple[str, Path]] = {name: (source, path)}
    pending = [name]
    where = path  # the file being parsed: the one a parse too deep for Python's recursion is in
    try:
        while pending:
            current = pending.pop()
            text, where = sources[current]
            for names, optional in _references(environment.parse(text, current, str(where))):
                if names is None:  # only a literal name can be read, pinned and hashed before the run
                    raise TemplateError(
                        f"{where}: includes, extends or imports a template named by an expression; name each one "
                        'literally, e.g. {% include "part.jinja2" %} (a choice between two: {% if x %}{% include '
                        '"a.jinja2" %}{% else %}{% include "b.jinja2" %}{% endif %})'
                    )
                for referenced in names:
                    if referenced in sources:
                        continue
                    # "ignore missing" and a list of names (the first that exists) may name files that are not there
                    there = (directory / referenced).exists() or (directory / referenced).is_symlink()
                    if optional and not there and stays_inside(referenced):
                        continue
                    sources[referenced] = (_read(directory, referenced, included_by=where), directory / referenced)
                    pending.append(referenced)
        where = path  # parsed, each file on its own: compiling them together is the template's
        environment.loader = jinja2.FunctionLoader(
            lambda requested: (
                (sources[requested][0], str(sources[requested][1]), lambda: True) if requested in sources else None
            )
        )
        template = environment.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"{exc.filename or path}:{exc.lineno}: {exc.message}") from None
    except RecursionError:  # Jinja parses and compiles by recursion: 100 nested brackets pass Python's limit
        raise TemplateError(
            f"{where}: nested too deeply for Jinja to compile (brackets, blocks or chained filters within one "
            "another, past Python's recursion limit); flatten it, e.g. set parts with {% set %} first"
        ) from None
    return template, {included: text for included, (text, _) in sources.items() if included != name}


def _references(ast: Any) -> Iterator[tuple[list[str] | None, bool]]:
    """The templates a parsed template includes, extends or imports: each tag's names (None: a name given by an
    expression), and whether a name may be missing (``ignore missing``, or a list of names, of which Jinja takes the
    first that exists). What ``jinja2.meta.find_referenced_templates`` finds, with what it leaves out."""
    from jinja2 import nodes

    for node in ast.find_all((nodes.Extends, nodes.FromImport, nodes.Import, nodes.Include)):
        template = node.template
        ignore_missing = isinstance(node, nodes.Include) and node.ignore_missing
        if isinstance(template, nodes.Const) and isinstance(template.value, str):
            yield [template.value], ignore_missing
        elif isinstance(template, nodes.Const) and isinstance(template.value, (list, tuple)):
            values = list(template.value)
            yield (values if all(isinstance(v, str) for v in values) else None), True
        elif isinstance(template, (nodes.Tuple, nodes.List)) and all(
            isinstance(item, nodes.Const) and isinstance(item.value, str) for item in template.items
        ):
            yield [item.value for item in template.items], True  # type: ignore[attr-defined]
        else:
            yield None, False


_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined")
_MISSING_KEY = re.compile(r"'dict object' has no attribute '([^']+)'")


def _undefined_hint(exc: Exception, variables: Sequence[str], metadata: object, example: Sample | None) -> str:
    """What an ``UndefinedError`` adds to help: for a misspelt variable, the near name and every variable; for a
    key a dict lacks, what the metadata of the sample (or the few-shot ``example`` at fault) holds, since that is
    the dict a dataset's own fields are read from (a mapped field is not kept there: ``target_raw`` is)."""
    if type(exc).__name__ != "UndefinedError":
        return ""
    if match := _UNDEFINED_NAME.fullmatch(str(exc)):
        close = difflib.get_close_matches(match[1], variables, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        return f" ({guess}the variables: {', '.join(dict.fromkeys(variables))})"
    if match := _MISSING_KEY.fullmatch(str(exc)):
        held = example.metadata if example is not None else metadata
        if isinstance(held, dict) and match[1] not in held:
            whose = "the example's" if example is not None else "the sample's"
            keys = f"holds {', '.join(sorted(map(str, held)))}" if held else "is empty"
            return f" (if that is metadata: {whose} metadata {keys})"
    return ""


def _located(exc: Exception, path: Path) -> str:
    """``file:line: message`` for a render error, found in the frames Jinja maps back to the template."""
    line: int | None = getattr(exc, "lineno", None)
    filename = str(path)
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        frame_file = tb.tb_frame.f_code.co_filename
        if frame_file.endswith(".jinja2") or frame_file == str(path):
            filename, line = frame_file, tb.tb_lineno
        tb = tb.tb_next
    where = f"{filename}:{line}" if line else filename
    return f"{where}: {type(exc).__name__}: {exc}"


__all__ = ["PromptTemplate", "load_template"]
