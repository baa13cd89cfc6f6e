"""Deterministic corpus and labelled queries for measuring memory search (no downloads).

The corpus imitates what an assistant remembers for a team: notes about twelve services,
each note about one *aspect* (timeouts, deploys, caching, ...), written in Chinese, English
or both the way engineers mix them, plus a large body of other notes (meetings, personal
preferences, general tips) that mention the same services without being about any aspect.

A query asks about one (service, aspect) pair, or about one aspect alone; its relevant URIs
are exactly the notes generated for that pair or aspect, known by construction, whatever
words the notes happen to use. Queries come in Chinese and English, short and long, and as
one- and two-character Chinese words.

``python bench/memory_eval/generate.py`` rewrites memories.jsonl and queries.json here;
``build_corpus(n, seed)`` gives larger corpora of the same kind to the benchmark.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

SERVICES = [
    ("payment-service", "支付服务"),
    ("order-service", "订单服务"),
    ("user-service", "用户服务"),
    ("search-service", "搜索服务"),
    ("inventory-service", "库存服务"),
    ("notification-service", "通知服务"),
    ("api-gateway", "网关"),
    ("report-service", "报表服务"),
    ("billing-service", "计费服务"),
    ("chat-service", "聊天服务"),
    ("media-service", "媒体服务"),
    ("recommend-service", "推荐服务"),
]

# aspect -> (Chinese word, English word, Chinese templates, English templates, mixed templates)
ASPECTS: dict[str, tuple[str, str, list[str], list[str], list[str]]] = {
    "timeout": (
        "超时",
        "timeout",
        [
            "{zh}调用{dep}经常超时，已把超时时间从 {a} 秒调到 {b} 秒，并加了重试。",
            "排查记录：{zh}在高峰期请求超时，原因是{dep}响应慢，临时把超时阈值设为 {b} 秒。",
        ],
        [
            "{en}: calls to {dep} time out under load; the client timeout went from {a}s to "
            "{b}s with retries.",
            "Incident: {en} request timeout spikes at peak hours, traced to slow {dep}; timeout now {b}s.",
        ],
        ["{zh}（{en}）的 HTTP client timeout 配置为 {b} 秒，超时后最多重试 {c} 次。"],
    ),
    "deploy": (
        "部署",
        "deploy",
        [
            "{zh}的部署流程：先跑 {tool}，再灰度发布到 {env}，观察 {c} 分钟后全量。",
            "{zh}部署注意：发布前必须先执行数据迁移脚本，{env} 环境要单独审批。",
        ],
        [
            "Deploying {en}: run {tool}, canary to {env}, wait {c} minutes, then roll out fully.",
            "{en} deploy checklist: migrations first, then {tool}; {env} needs a separate approval.",
        ],
        ["{en} 的 deploy 用 {tool}，{zh}部署到 {env} 前要先打 tag。"],
    ),
    "cache": (
        "缓存",
        "cache",
        [
            "{zh}用 Redis 缓存{thing}，过期时间 {a} 秒，缓存键前缀是 {en}:。",
            "{zh}缓存击穿问题：热点{thing}失效时大量请求打到{dep}，已加互斥重建。",
        ],
        [
            "{en} caches {thing_en} in Redis with a TTL of {a}s; keys are prefixed with {en}:.",
            "Cache stampede in {en}: when hot {thing_en} expire, requests flood {dep}; added "
            "a rebuild mutex.",
        ],
        ["{zh}的 cache 命中率只有 {c}%，缓存{thing}的 TTL 需要调大。"],
    ),
    "database": (
        "数据库",
        "database",
        [
            "{zh}的数据库连接池上限 {a}，空闲连接 {c} 分钟回收，主库是 PostgreSQL。",
            "{zh}数据库慢查询：{thing}表缺少索引，已添加联合索引，查询从 {a} 毫秒降到 {c} 毫秒。",
        ],
        [
            "{en} database pool: max {a} connections, idle ones closed after {c} minutes; "
            "primary is PostgreSQL.",
            "Slow database queries in {en}: the {thing_en} table lacked an index; latency "
            "fell from {a}ms to {c}ms.",
        ],
        ["{en} 的 database 连接池（connection pool）大小是 {a}，{zh}只连只读副本做报表。"],
    ),
    "lock": (
        "锁",
        "lock",
        [
            "{zh}用分布式锁保护{thing}的扣减，锁的过期时间 {c} 秒，防止重复处理。",
            "{zh}死锁事故：两个事务以不同顺序加锁，已统一加锁顺序。",
        ],
        [
            "{en} takes a distributed lock around {thing_en} updates; the lock expires after {c}s.",
            "Deadlock in {en}: two transactions took row locks in opposite order; lock order is now fixed.",
        ],
        ["{en} 的 lock 用 Redis 实现，{zh}加锁失败时直接返回 429。"],
    ),
    "logging": (
        "日志",
        "log",
        [
            "{zh}的日志级别在生产环境是 WARN，排查问题时可临时改为 DEBUG，日志保留 {c} 天。",
            "{zh}日志太多把磁盘写满了，已开启日志轮转，单文件上限 {a} MB。",
        ],
        [
            "{en} logs at WARN in production; switch the log level to DEBUG while debugging; "
            "logs kept {c} days.",
            "{en} log volume filled the disk; log rotation is on now with {a} MB per file.",
        ],
        ["{zh}（{en}）的 access log 接入了 ELK，日志里要脱敏手机号。"],
    ),
    "auth": (
        "鉴权",
        "auth",
        [
            "{zh}的接口鉴权用 JWT，token 有效期 {c} 小时，刷新 token 有效期 {a} 天。",
            "{zh}鉴权失败排查：网关没有透传 Authorization 头，导致 401。",
        ],
        [
            "{en} auth uses JWT; access tokens live {c} hours and refresh tokens {a} days.",
            "{en} returned 401 because the gateway dropped the Authorization header before auth.",
        ],
        ["{en} 的 auth 中间件校验签名，{zh}鉴权白名单放在配置中心。"],
    ),
    "memory_leak": (
        "内存泄漏",
        "memory leak",
        [
            "{zh}内存泄漏：{thing}对象被全局字典引用不释放，每天涨 {a} MB，已改为弱引用。",
            "{zh}出现内存泄漏，堆转储显示大量未关闭的连接，修复后内存稳定在 {a} MB。",
        ],
        [
            "Memory leak in {en}: {thing_en} objects stayed in a global dict, growing {a} MB "
            "a day; now weak refs.",
            "{en} memory leak: heap dump showed unclosed connections; after the fix memory stays at {a} MB.",
        ],
        ["{en} 的 memory leak 是因为没关闭 stream，{zh}内存泄漏已修复。"],
    ),
    "rate_limit": (
        "限流",
        "rate limit",
        [
            "{zh}限流策略：每个用户每秒 {c} 次请求，超过返回 429，令牌桶容量 {a}。",
            "{zh}被{dep}限流了，需要在客户端做退避重试，并申请提高配额。",
        ],
        [
            "{en} rate limit: {c} requests per second per user, token bucket of {a}; excess gets 429.",
            "{en} is being rate limited by {dep}; add client backoff and ask for a higher quota.",
        ],
        ["{en} 的 rate limit 在网关配置，{zh}限流阈值是 {c} QPS。"],
    ),
    "queue": (
        "消息队列",
        "message queue",
        [
            "{zh}通过消息队列 Kafka 异步处理{thing}，消费延迟超过 {a} 秒会告警。",
            "{zh}消息队列积压：消费者处理太慢，已把分区数从 {c} 加到 {a}。",
        ],
        [
            "{en} handles {thing_en} asynchronously through a Kafka message queue; consumer "
            "lag over {a}s alerts.",
            "Message queue backlog in {en}: consumers were too slow; partitions raised from {c} to {a}.",
        ],
        ["{en} 的 message queue 用 Kafka，{zh}消费组名是 {en}-consumer。"],
    ),
}

DEPENDENCIES = [
    "库存服务",
    "第三方支付网关",
    "风控系统",
    "短信平台",
    "ElasticSearch",
    "对象存储",
    "推荐引擎",
    "账务系统",
]
THINGS = [
    ("订单", "orders"),
    ("商品详情", "product details"),
    ("用户资料", "user profiles"),
    ("优惠券", "coupons"),
    ("库存", "stock levels"),
    ("会话", "sessions"),
    ("报表", "reports"),
    ("消息", "messages"),
]
TOOLS = ["Argo CD", "Helm", "Jenkins", "GitHub Actions", "Ansible", "Spinnaker"]
ENVS = ["staging", "生产环境", "预发环境", "production", "canary 集群"]

# Notes about nothing above: meetings, people, preferences, general tips. Their words avoid
# every aspect word, so they are never relevant, only in the way.
OTHER_TEMPLATES = [
    "{date} 周会：讨论了{zh}下个迭代的需求排期，产品希望 {month} 月上线新功能。",
    "{date} weekly sync: {en} roadmap for the next sprint; product wants the new feature by {month_en}.",
    "用户喜欢简洁的回答，先给结论再解释；代码示例用 {lang}。",
    "The user prefers concise answers with the conclusion first; code samples in {lang}.",
    "{person}负责{zh}的需求评审，有问题先找{person}。",
    "{person_en} owns the {en} design reviews; ask {person_en} first.",
    "Git 小技巧：用 git worktree 同时检出多个分支，比 stash 更方便。",
    "Tip: `git rebase -i --autosquash` folds fixup commits automatically.",
    "团队约定：代码评审至少一人批准，PR 描述要写清楚动机和测试方式。",
    "Team rule: every PR needs one approval and a description of motivation and testing.",
    "{zh}的接口文档放在 Confluence 的 {en} 空间，字段说明以文档为准。",
    "The {en} API reference lives in the wiki; field meanings follow the document.",
    "周五下午不做线上变更，紧急情况需要值班负责人同意。",
    "{person}下周 {month} 号请假，{zh}的值班由{person2}代替。",
    "Reminder: the quarterly planning for {en} is on {month_en} {day}.",
    "用户的时区是 UTC+8，安排会议时注意避开中午 12 点到 1 点半。",
    "Python 风格：类型注解必须写全，mypy 严格模式，行宽 110。",
    "The user dislikes emoji in commit messages and wants conventional commit prefixes.",
    "{zh}的产品经理是{person}，设计稿在 Figma 的「{zh}」项目里。",
    "Onboarding note for {en}: read the architecture overview, then pair with {person_en} for a day.",
    "前端规范：组件用函数式写法，状态管理统一用 {state}。",
    "Frontend convention: function components only; state management with {state}.",
    "{date} 复盘会议：{zh}需求变更太频繁，以后需求冻结后不再加需求。",
    "{date} retro: scope changes on {en} were too frequent; no new scope after freeze.",
]
# Context sentences a real note carries around its fact (background, follow-ups); they avoid
# every aspect word and every word holding one ("login", "block", "author", ...).
CONTEXT_SENTENCES = [
    "背景：这是在季度复盘时整理的，后续有变化请及时更新这条记录。",
    "相关讨论见当周的技术评审纪要，参与人包括后端和测试同学。",
    "备注：该结论已经和负责人确认过，适用于当前的主干版本。",
    "后续计划：下个迭代补充自动化测试，并在周报里同步进展。",
    "影响范围主要是线上用户的下单流程，其他业务暂未发现异常。",
    "如需回溯，可以在工单系统里按服务名检索历史记录。",
    "这条经验适用于大多数后端服务，新同学入职时可以参考。",
    "补充：测试环境和线上环境的配置并不完全一致，验证时要注意。",
    "Context: written up after the quarterly review; update this note if anything changes.",
    "See the design review minutes of that week for the full discussion with QA.",
    "Confirmed with the owner; applies to the current main branch.",
    "Follow-up: add automated tests next sprint and report progress in the weekly update.",
    "Impact was limited to the checkout flow; other features looked normal.",
    "Search the ticket tracker by service name to find the history.",
    "New team members should read this before touching the service.",
    "Note that staging and production settings differ, so verify in both.",
]
PEOPLE = [
    ("张伟", "Zhang Wei"),
    ("李娜", "Li Na"),
    ("王芳", "Wang Fang"),
    ("刘洋", "Liu Yang"),
    ("陈静", "Chen Jing"),
    ("杨磊", "Yang Lei"),
    ("赵敏", "Zhao Min"),
    ("周杰", "Zhou Jie"),
]
LANGS = ["Python", "TypeScript", "Go", "Rust", "Java"]
STATES = ["Zustand", "Redux Toolkit", "Pinia", "MobX"]
MONTHS_EN = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _fill(template: str, rng: random.Random, service: tuple[str, str]) -> str:
    thing_zh, thing_en = rng.choice(THINGS)
    person, person_en = rng.choice(PEOPLE)
    month = rng.randint(1, 12)
    return template.format(
        en=service[0],
        zh=service[1],
        dep=rng.choice(DEPENDENCIES),
        thing=thing_zh,
        thing_en=thing_en,
        tool=rng.choice(TOOLS),
        env=rng.choice(ENVS),
        a=rng.choice([5, 10, 30, 60, 64, 128, 200, 256, 500]),
        b=rng.choice([3, 8, 15, 20, 45]),
        c=rng.choice([2, 3, 7, 12, 30]),
        date=f"2025-{month:02d}-{rng.randint(1, 28):02d}",
        month=month,
        month_en=MONTHS_EN[month - 1],
        day=rng.randint(1, 28),
        person=person,
        person_en=person_en,
        person2=rng.choice(PEOPLE)[0],
        lang=rng.choice(LANGS),
        state=rng.choice(STATES),
    )


def build_corpus(
    total: int, seed: int = 7, notes_per_pair: int = 4, context_sentences: int = 0
) -> list[dict]:
    """``total`` memories: ``notes_per_pair`` notes per (service, aspect), the rest other notes.

    Each memory is {uri, content, priority, disclosure, service, aspect}; the last two are the
    labels (None for other notes) and are not imported. ``context_sentences`` adds up to that
    many background sentences (at least half that many) to each note, for paragraph-sized memories.
    """
    rng = random.Random(seed)
    memories: list[dict] = []
    rounds = max(1, notes_per_pair)
    for round_number in range(rounds):
        for service in SERVICES:
            for aspect, (_zh, _en, zh_templates, en_templates, mixed) in ASPECTS.items():
                pool = [*zh_templates, *en_templates, *mixed]
                template = pool[(round_number + len(memories)) % len(pool)]
                domain = rng.choice(["project", "debug", "decision", "ops"])
                uri = f"{domain}://{service[0]}/{aspect}/{round_number}"
                memories.append(
                    {
                        "uri": uri,
                        "content": _fill(template, rng, service),
                        "priority": rng.randint(2, 8),
                        "disclosure": "",
                        "service": service[0],
                        "aspect": aspect,
                    }
                )
    index = 0
    while len(memories) < total:
        service = rng.choice(SERVICES)
        template = rng.choice(OTHER_TEMPLATES)
        domain = rng.choice(["notes", "meeting", "user", "team"])
        memories.append(
            {
                "uri": f"{domain}://{service[0]}/note-{index}",
                "content": _fill(template, rng, service),
                "priority": rng.randint(3, 9),
                "disclosure": "",
                "service": None,
                "aspect": None,
            }
        )
        index += 1
    rng.shuffle(memories)
    if context_sentences:
        extra = random.Random(seed + 1)
        for memory in memories:
            count = extra.randint(max(1, context_sentences // 2), context_sentences)
            memory["content"] += " " + " ".join(extra.sample(CONTEXT_SENTENCES, count))
    return memories[:total] if total >= len(SERVICES) * len(ASPECTS) * rounds else memories


def build_queries(memories: list[dict], seed: int = 11) -> list[dict]:
    """Labelled queries: pairs in both languages, long questions, and short Chinese words."""
    rng = random.Random(seed)
    by_pair: dict[tuple[str, str], list[str]] = {}
    by_aspect: dict[str, list[str]] = {}
    for memory in memories:
        if memory["aspect"]:
            by_pair.setdefault((memory["service"], memory["aspect"]), []).append(memory["uri"])
            by_aspect.setdefault(memory["aspect"], []).append(memory["uri"])
    queries: list[dict] = []
    pairs = sorted(by_pair)
    rng.shuffle(pairs)
    zh_of = dict(SERVICES)
    question_zh = ["{svc}{word}了怎么办", "{svc}的{word}是怎么配置的", "之前{svc}{word}问题是怎么解决的"]
    question_en = [
        "how did we handle {word} in {svc}",
        "what is the {word} setup of {svc}",
        "{svc} {word} problem last time",
    ]
    for n, (service, aspect) in enumerate(pairs[:60]):
        zh_word, en_word = ASPECTS[aspect][0], ASPECTS[aspect][1]
        kind = n % 5
        if kind == 0:
            text, style = f"{zh_of[service]} {zh_word}", "zh-short"
        elif kind == 1:
            text, style = f"{service} {en_word}", "en-short"
        elif kind == 2:
            text, style = rng.choice(question_zh).format(svc=zh_of[service], word=zh_word), "zh-long"
        elif kind == 3:
            text, style = rng.choice(question_en).format(svc=service, word=en_word), "en-long"
        else:
            text, style = f"{zh_of[service]} {en_word}", "mixed"
        queries.append({"query": text, "style": style, "relevant": sorted(by_pair[(service, aspect)])})
    for aspect in ("lock", "cache", "auth", "logging", "rate_limit", "deploy"):
        zh_word = {
            "lock": "锁",
            "cache": "缓存",
            "auth": "鉴权",
            "logging": "日志",
            "rate_limit": "限流",
            "deploy": "部署",
        }[aspect]
        queries.append(
            {"query": zh_word, "style": f"zh-{len(zh_word)}char", "relevant": sorted(by_aspect[aspect])}
        )
    return queries


def main() -> None:
    memories = build_corpus(2_100)
    queries = build_queries(memories)
    with (HERE / "memories.jsonl").open("w", encoding="utf-8") as out:
        for memory in memories:
            out.write(json.dumps(memory, ensure_ascii=False) + "\n")
    (HERE / "queries.json").write_text(
        json.dumps(queries, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    print(f"{len(memories)} memories, {len(queries)} queries written to {HERE}")


if __name__ == "__main__":
    main()
