"""Thinking templates: named, ordered steps with guidance, in English and Chinese.

A session created from a template plans one thought per step; each answer in that session
names the step the next thought should address. Four templates are built in; users add
their own as YAML or JSON files in a folder (``UserTemplates``), checked file by file so a
broken one is named with its field and never hides the others.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hostd import Text, validation_reason
from hostd_deep_thinking.jsonshape import refuse_constant
from hostd_deep_thinking.models import TemplateInfo, TemplateStep


@dataclass(frozen=True)
class Template:
    template_id: str
    name: Text
    description: Text
    steps: tuple[tuple[Text, Text], ...]  # (title, guidance)
    file: str | None = None  # where a user template was read from

    def info(self, language: str) -> TemplateInfo:
        return TemplateInfo(
            template_id=self.template_id,
            name=self.name.render(language),
            description=self.description.render(language),
            steps=[
                TemplateStep(index=index, title=title.render(language), guidance=guidance.render(language))
                for index, (title, guidance) in enumerate(self.steps, start=1)
            ],
            source="built_in" if self.file is None else "user",
            file=self.file,
        )


B = Text

TEMPLATES: dict[str, Template] = {
    template.template_id: template
    for template in (
        Template(
            "problem_solving",
            B("Problem solving", "问题解决"),
            B(
                "From a clear problem statement to a checked solution.",
                "从清晰的问题陈述走到经过验证的解决方案。",
            ),
            (
                (
                    B("Define the problem", "定义问题"),
                    B(
                        "State the problem in one or two sentences: what is wrong, for whom, "
                        "and how you will know it is solved.",
                        "用一两句话说明问题：哪里不对、影响谁、怎样算解决。",
                    ),
                ),
                (
                    B("Gather facts and constraints", "收集事实与约束"),
                    B(
                        "List what is known, what is assumed, and the limits any solution must respect "
                        "(time, cost, compatibility).",
                        "列出已知事实、假设，以及任何方案都必须遵守的限制（时间、成本、兼容性）。",
                    ),
                ),
                (
                    B("Generate options", "提出备选方案"),
                    B(
                        "Write down at least three different ways to solve it, including a simple one.",
                        "写下至少三种不同的解法，其中包括一种简单方案。",
                    ),
                ),
                (
                    B("Evaluate and choose", "评估并选择"),
                    B(
                        "Compare the options against the constraints; pick one and say why the others lost.",
                        "对照约束比较各方案；选定一个，并说明其余方案为何落选。",
                    ),
                ),
                (
                    B("Plan and verify", "计划与验证"),
                    B(
                        "Break the chosen option into steps and describe how you will check that it worked.",
                        "把选定方案拆成步骤，并说明如何检验它确实奏效。",
                    ),
                ),
            ),
        ),
        Template(
            "root_cause_analysis",
            B("Root-cause analysis", "根因分析"),
            B(
                "Trace a failure back to the cause that, once removed, stops it recurring.",
                "把故障追溯到去除后就不再复发的根本原因。",
            ),
            (
                (
                    B("Describe the symptom", "描述现象"),
                    B(
                        "Say exactly what was observed, when, where, and how often; "
                        "separate facts from guesses.",
                        "准确说明观察到的现象、时间、位置和频率；区分事实与猜测。",
                    ),
                ),
                (
                    B("Establish the timeline", "梳理时间线"),
                    B(
                        "List the changes and events before the first occurrence; note what changed last.",
                        "列出首次发生前的变更与事件；注意最后一次变化是什么。",
                    ),
                ),
                (
                    B("Ask why, repeatedly", "连续追问为什么"),
                    B(
                        "Ask 'why did this happen?' for each cause until you reach one you can act on.",
                        "对每个原因追问“为什么会这样”，直到找到可以采取行动的原因。",
                    ),
                ),
                (
                    B("Confirm the root cause", "确认根因"),
                    B(
                        "Find evidence that removing the cause removes the symptom "
                        "(a test, a log, a replay).",
                        "找到证据证明去除该原因后现象消失（测试、日志或重放）。",
                    ),
                ),
                (
                    B("Prevent recurrence", "防止复发"),
                    B(
                        "Decide the fix and the guard (test, alert, check) that keeps it from coming back.",
                        "确定修复方案以及防止复发的保障（测试、告警、检查）。",
                    ),
                ),
            ),
        ),
        Template(
            "decision_making",
            B("Decision making", "决策分析"),
            B(
                "Choose between alternatives with explicit criteria and a recorded rationale.",
                "依据明确的标准在备选项之间做出选择，并记录理由。",
            ),
            (
                (
                    B("Frame the decision", "界定决策"),
                    B(
                        "State what must be decided, by when, and what happens if nothing is decided.",
                        "说明需要决定什么、截止何时，以及不做决定会怎样。",
                    ),
                ),
                (
                    B("Set the criteria", "确定标准"),
                    B(
                        "List the criteria that matter and weigh them; mark the ones that are must-haves.",
                        "列出重要的评判标准并分配权重；标出必须满足的项。",
                    ),
                ),
                (
                    B("List the alternatives", "列出备选项"),
                    B(
                        "Describe each alternative concretely enough to be scored, including doing nothing.",
                        "具体描述每个备选项（包括维持现状），使其可以打分。",
                    ),
                ),
                (
                    B("Score and weigh risks", "打分并权衡风险"),
                    B(
                        "Score each alternative per criterion and note the main risk of each.",
                        "按每条标准给各备选项打分，并写出各自的主要风险。",
                    ),
                ),
                (
                    B("Decide and record", "做出决定并记录"),
                    B(
                        "Name the choice, the reasons, and what would make you revisit it.",
                        "写明选择、理由，以及在什么情况下需要重新审视。",
                    ),
                ),
            ),
        ),
        Template(
            "research_plan",
            B("Research plan", "调研计划"),
            B(
                "Turn an open question into sources, findings and a conclusion.",
                "把开放问题转化为资料来源、发现和结论。",
            ),
            (
                (
                    B("State the question", "提出问题"),
                    B(
                        "Write the question and what a useful answer would let you do.",
                        "写下问题，以及有用的答案能让你做什么。",
                    ),
                ),
                (
                    B("Choose sources", "选择资料来源"),
                    B(
                        "List where answers may come from and how reliable each source is.",
                        "列出答案可能的来源及各自的可靠程度。",
                    ),
                ),
                (
                    B("Collect findings", "收集发现"),
                    B(
                        "Record what each source says, with the evidence, and where sources disagree.",
                        "记录每个来源的说法及证据，并指出来源之间的分歧。",
                    ),
                ),
                (
                    B("Conclude", "得出结论"),
                    B(
                        "Answer the question, state your confidence and what is still unknown.",
                        "回答问题，说明把握程度以及仍未知的部分。",
                    ),
                ),
            ),
        ),
    )
}


def step_after(template: Template | None, label: int, language: str) -> TemplateStep | None:
    """The template step the thought after label ``label`` should address, if any is left."""
    if template is None or label >= len(template.steps):
        return None
    index = max(label, 0)
    title, guidance = template.steps[index]
    return TemplateStep(index=index + 1, title=title.render(language), guidance=guidance.render(language))


# --- user templates ------------------------------------------------------------------------

TEMPLATE_SUFFIXES = (".yaml", ".yml", ".json")
MAX_TEMPLATE_BYTES = 64 * 1024
MAX_TEMPLATE_FILES = 200
MAX_TEMPLATE_STEPS = 50
TEMPLATE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_ID = re.compile(TEMPLATE_ID_PATTERN)


@dataclass(frozen=True)
class TemplateProblem:
    """Why a user template file cannot be used: the file, the field at fault, in both languages."""

    file: str
    field: str
    problem: Text
    template_id: str | None  # the id it would have had, so create_session can explain itself


class _LocalText(BaseModel):
    model_config = ConfigDict(extra="forbid")
    en: str | None = Field(default=None, min_length=1, max_length=2000)
    zh: str | None = Field(default=None, min_length=1, max_length=2000)


#: A text of a template file: one string for both languages, or ``{en: ..., zh: ...}``.
FileText = Annotated[str, Field(min_length=1, max_length=2000)] | _LocalText


class _StepFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: FileText
    guidance: FileText


class _TemplateFile(BaseModel):
    """A user template file: ``name``, ``steps`` (each ``title`` and ``guidance``), optional
    ``template_id`` (default: the file's name without suffix) and ``description``. Texts are a
    string or ``{en: ..., zh: ...}`` (one language is enough; it is shown for both)."""

    model_config = ConfigDict(extra="forbid")
    template_id: str | None = Field(default=None, pattern=TEMPLATE_ID_PATTERN)
    name: FileText
    description: FileText = ""
    steps: list[_StepFile] = Field(min_length=1, max_length=MAX_TEMPLATE_STEPS)


#: How pydantic names the members of ``FileText`` in an error's location; not fields of the file.
_UNION_TAGS = frozenset({"str", "constrained-str", "_LocalText"})


def _bilingual(text: str | _LocalText) -> Text:
    if isinstance(text, str):
        return Text.same(text)
    en = text.en or text.zh or ""
    return Text(en=en, zh=text.zh or en)


class _Refused(Exception):
    def __init__(self, field: str, en: str, zh: str) -> None:
        super().__init__(en)
        self.field = field
        self.problem = Text(en=en, zh=zh)


def _parse(path: Path, data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused("(file)", "not UTF-8 text", "不是 UTF-8 文本") from None
    if path.suffix == ".json":
        try:
            return json.loads(text, parse_constant=refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise _Refused("(file)", f"not valid JSON: {exc}", f"不是合法的 JSON{_where_zh(exc)}") from None
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """YAML without aliases: a small file must not expand into a huge document."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("aliases (*name) are not allowed in templates")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliasLoader)
    except (yaml.YAMLError, RecursionError) as exc:
        where = " ".join(str(exc).split())[:300]
        raise _Refused("(file)", f"not valid YAML: {where}", f"不是合法的 YAML{_where_zh(exc)}") from None


#: What a template file's texts must be, said for pydantic's ``model_type`` of ``FileText``.
#: Where a template's words differ from the host's (``hostd.validation_reason``): a text field.
_TEXT_ZH = {"model_type": "必须是文本或 {en: ..., zh: ...}"}


def _where_zh(exc: BaseException) -> str:
    """Where a parser stopped, in Chinese ('（第 3 行第 7 列）'), or '' when it does not say."""
    mark = getattr(exc, "problem_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    line, column = getattr(exc, "lineno", line), getattr(exc, "colno", column)
    return f"（第 {line} 行第 {column} 列）" if line is not None else ""


def read_template(path: Path, data: bytes) -> Template:
    """One user template from its file's bytes; raises ``_Refused`` naming the field at fault."""
    raw = _parse(path, data)
    if not isinstance(raw, dict):
        raise _Refused("(root)", "the template is not a mapping of fields", "模板不是字段映射（对象）")
    try:
        parsed = _TemplateFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"] if part not in _UNION_TAGS) or "(root)"
        if first["type"] == "missing":
            raise _Refused(where, "missing", "缺少该字段") from None
        if first["type"] == "extra_forbidden":
            raise _Refused(where, "unknown field", "未知字段") from None
        why = validation_reason(first)
        raise _Refused(where, why.en, _TEXT_ZH.get(first["type"], why.zh)) from None
    template_id = parsed.template_id or path.stem
    if not _ID.fullmatch(template_id):
        raise _Refused(
            "template_id",
            f"'{template_id[:80]}' is not a valid id (letters, digits, '_' and '-', 1-64 characters)",
            f"'{template_id[:80]}' 不是合法的 id（字母、数字、'_' 和 '-'，1-64 个字符）",
        )
    return Template(
        template_id,
        _bilingual(parsed.name),
        _bilingual(parsed.description),
        tuple((_bilingual(step.title), _bilingual(step.guidance)) for step in parsed.steps),
        file=str(path),
    )


class UserTemplates:
    """The templates in one folder, read again when a file there changes (name, size or time).

    Templates are the user's configuration, not session data: they stay files even when
    sessions live in a database. A file whose template cannot be used is reported (file,
    field, problem) and left out; a user template never replaces a built-in one, so sessions
    made from a built-in template keep their steps.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._guard = threading.Lock()
        self._seen: tuple[tuple[str, int, int], ...] | None = None
        self._templates: dict[str, Template] = {}
        self._problems: list[TemplateProblem] = []

    def load(self) -> tuple[dict[str, Template], list[TemplateProblem]]:
        with self._guard:
            files = self._listing()
            if files != self._seen:
                self._templates, self._problems = self._read(files)
                self._seen = files
            return dict(self._templates), list(self._problems)

    def _listing(self) -> tuple[tuple[str, int, int], ...]:
        try:
            entries = sorted(os.scandir(self.folder), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return ()
        found = []
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(TEMPLATE_SUFFIXES):
                continue
            try:
                info = entry.stat()
            except OSError:
                continue
            found.append((entry.name, info.st_size, info.st_mtime_ns))
        return tuple(found)

    def _read(
        self, files: tuple[tuple[str, int, int], ...]
    ) -> tuple[dict[str, Template], list[TemplateProblem]]:
        templates: dict[str, Template] = {}
        problems: list[TemplateProblem] = []

        def refuse(name: str, field: str, problem: Text, template_id: str | None = None) -> None:
            path = str(self.folder / name)
            problems.append(TemplateProblem(file=path, field=field, problem=problem, template_id=template_id))

        for number, (name, _size, _time) in enumerate(files):
            path = self.folder / name
            if number >= MAX_TEMPLATE_FILES:
                refuse(
                    name,
                    "(file)",
                    Text(
                        en=f"more than {MAX_TEMPLATE_FILES} template files: this one was not read",
                        zh=f"模板文件超过 {MAX_TEMPLATE_FILES} 个：此文件未读取",
                    ),
                )
                continue
            try:
                data = _read_capped(path)
                template = read_template(path, data)
            except _Refused as exc:
                refuse(name, exc.field, exc.problem, template_id=path.stem)
                continue
            if template.template_id in TEMPLATES:
                refuse(
                    name,
                    "template_id",
                    Text(
                        en=f"'{template.template_id}' is a built-in template; "
                        "a user template cannot replace it",
                        zh=f"'{template.template_id}' 是内置模板；用户模板不能替换它",
                    ),
                    template.template_id,
                )
            elif template.template_id in templates:
                other = templates[template.template_id].file
                refuse(
                    name,
                    "template_id",
                    Text(
                        en=f"'{template.template_id}' is already defined by {other}",
                        zh=f"'{template.template_id}' 已由 {other} 定义",
                    ),
                    template.template_id,
                )
            else:
                templates[template.template_id] = template
        return templates, problems


def _read_capped(path: Path) -> bytes:
    """A template file's bytes: a regular file of at most MAX_TEMPLATE_BYTES, else ``_Refused``."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise _Refused("(file)", "not a regular file", "不是普通文件")
            data = handle.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise _Refused(
            "(file)", f"cannot be read ({exc.strerror})", f"无法读取（错误码 {exc.errno}）"
        ) from None
    if len(data) > MAX_TEMPLATE_BYTES:
        raise _Refused(
            "(file)",
            f"larger than {MAX_TEMPLATE_BYTES // 1024} KiB",
            f"大于 {MAX_TEMPLATE_BYTES // 1024} KiB",
        )
    return data
