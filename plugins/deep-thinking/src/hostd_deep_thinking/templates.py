"""Built-in thinking templates: named, ordered steps with guidance, in English and Chinese.

A session created from a template plans one thought per step; each answer in that session
names the step the next thought should address.
"""

from __future__ import annotations

from dataclasses import dataclass

from hostd_deep_thinking.models import TemplateInfo, TemplateStep


@dataclass(frozen=True)
class Bilingual:
    en: str
    zh: str

    def pick(self, language: str) -> str:
        return self.zh if language == "zh" else self.en


@dataclass(frozen=True)
class Template:
    template_id: str
    name: Bilingual
    description: Bilingual
    steps: tuple[tuple[Bilingual, Bilingual], ...]  # (title, guidance)

    def info(self, language: str) -> TemplateInfo:
        return TemplateInfo(
            template_id=self.template_id,
            name=self.name.pick(language),
            description=self.description.pick(language),
            steps=[
                TemplateStep(index=index, title=title.pick(language), guidance=guidance.pick(language))
                for index, (title, guidance) in enumerate(self.steps, start=1)
            ],
        )


B = Bilingual

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


def template_info(template_id: str, language: str) -> TemplateInfo | None:
    template = TEMPLATES.get(template_id)
    return template.info(language) if template else None


def step_after(template_id: str | None, label: int, language: str) -> TemplateStep | None:
    """The template step the thought after label ``label`` should address, if any is left."""
    if template_id is None:
        return None
    info = template_info(template_id, language)
    if info is None or label >= len(info.steps):
        return None
    return info.steps[max(label, 0)]
