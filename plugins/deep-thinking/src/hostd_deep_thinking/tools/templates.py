"""The templates tool, and how the other tools find a session's template.

Built-in templates live in ``templates.py``; the user's are files in the templates folder
(the ``templates_dir`` setting), read again when they change.
"""

from __future__ import annotations

from pathlib import Path

from hostd import Text, ToolError
from hostd_deep_thinking.models import InvalidTemplate, TemplatesOutput
from hostd_deep_thinking.thinking_templates import TEMPLATES, Template, TemplateProblem, UserTemplates
from hostd_deep_thinking.tools.common import Context


def templates_folder(ctx: Context) -> Path:
    """The user templates' folder: the ``templates_dir`` setting (relative to the data folder), else
    ``templates/`` in the plugin's data folder."""
    configured = ctx.settings.templates_dir
    return ctx.data_dir / Path(configured).expanduser() if configured else ctx.data_dir / "templates"


def user_templates(ctx: Context) -> UserTemplates:
    return ctx.resource("user-templates", lambda: UserTemplates(templates_folder(ctx)))


def all_templates(ctx: Context) -> tuple[dict[str, Template], list[TemplateProblem]]:
    """Built-in templates, then the user's (never replacing a built-in one), and the user files refused."""
    users, problems = user_templates(ctx).load()
    return {**TEMPLATES, **users}, problems


def find_template(ctx: Context, template_id: str | None) -> Template | None:
    """The session's template; None without one, or when its user file is gone or broken now."""
    if template_id is None:
        return None
    return TEMPLATES.get(template_id) or user_templates(ctx).load()[0].get(template_id)


def unknown_template(template_id: str, valid: list[str], problems: list[TemplateProblem]) -> ToolError:
    """No usable template of that id: the broken user file that would have defined it, else the valid ids."""
    broken = next((problem for problem in problems if problem.template_id == template_id), None)
    if broken is not None:
        return ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Template '{template_id}' cannot be used: {broken.file}: {broken.field}: ",
                zh=f"模板 '{template_id}' 无法使用：{broken.file}：{broken.field}：",
            )
            + broken.problem
            + Text(en=".", zh="。"),
            hint=Text(
                en="Fix that field in the file (list_templates shows every file left out), "
                "or choose another template_id.",
                zh="请修正文件中的该字段（list_templates 列出所有未采用的文件），或换一个 template_id。",
            ),
            details={"argument": "template_id", "file": broken.file, "field": broken.field},
        )
    return ToolError(
        "INVALID_ARGUMENT",
        Text(en=f"Unknown template '{template_id}'.", zh=f"未知模板 '{template_id}'。"),
        hint=Text(en="Valid template_id values: ", zh="可用的 template_id：") + ", ".join(valid),
        details={"argument": "template_id", "valid": valid},
    )


def list_templates(ctx: Context) -> TemplatesOutput:
    """List the thinking templates (built-in and the user's files) for create_session's template_id."""
    templates, problems = all_templates(ctx)
    invalid = [
        InvalidTemplate(file=problem.file, field=problem.field, problem=problem.problem)
        for problem in problems
    ]
    message = Text(en=f"{len(templates)} templates.", zh=f"共 {len(templates)} 个模板。")
    if invalid:
        message += Text(
            en=f" {len(invalid)} template file(s) left out: see invalid_templates.",
            zh=f" {len(invalid)} 个模板文件未采用：见 invalid_templates。",
        )
    return TemplatesOutput(
        templates=[template.info(ctx.language) for template in templates.values()],
        templates_folder=str(templates_folder(ctx)),
        invalid_templates=invalid,
    ).with_message(message)
