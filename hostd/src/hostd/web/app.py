"""The dashboard as an ASGI app: sign-in, CSRF, language, layout, navigation, static files,
error pages, and the plugins' pages collected through ``hostd_register_views``.

It is mounted at ``/ui``, behind the transport's ``GuardMiddleware`` (Host and Origin checks,
body cap) both by ``hostd web`` and by ``transport.dashboard: true``. It keeps no state
between requests: the cookie is signed (``signing``), so any replica serves any page.
"""

from __future__ import annotations

import base64
import logging
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from hostd_errors import CodedError, Message, Text, render

from hostd.core.i18n import Language
from hostd.core.identity import Member
from hostd.core.view_api import (
    PageRender,
    ViewFile,
    ViewRedirect,
)
from hostd.web.rendering import STATIC, environment, page_style
from hostd.web.signing import Session, Signer

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp

    from hostd.core.host import Host
    from hostd.core.tools import ToolSpec
    from hostd.team.members import MemberDirectory
    from hostd.team.signouts import SignOuts
    from hostd.web.signing import OneTimeToken

from hostd.web import overview
from hostd.web.constants import (
    BASE,
    CSRF_FIELD,
    LANGUAGE_COOKIE,
    LOCAL_FINGERPRINT,
    NOTICE_COOKIE,
    SESSION_COOKIE,
    STATUS_OF_CODE,
)
from hostd.web.headers import SecurityHeaders, content_security_policy
from hostd.web.views import DashboardRequest, collect_views, download

logger = logging.getLogger("hostd.web")
OutputT = TypeVar("OutputT")


class SignIn:
    """How members sign in: a one-time link (``hostd web``), a member token (team), or, on a
    loopback bind with no member source at all, a button for the local member.

    ``member_source`` says the transport knows its callers some way (a token, a tokens file,
    OAuth) or is not a loopback bind: then the open button is never offered, and without member
    tokens there is no way to sign in (``closed``) rather than a way in for anyone."""

    def __init__(
        self,
        *,
        local_member: str,
        one_time: OneTimeToken | None = None,
        members: MemberDirectory | None = None,
        member_source: bool = False,
        signouts: SignOuts | None = None,
    ) -> None:
        self.local_member = local_member
        self.one_time = one_time
        self.members = members
        self.member_source = member_source
        self.signouts = signouts

    def signed_out(self, session: Session) -> bool:
        """Whether its member signed out since the cookie was issued (on any replica)."""
        if self.signouts is None:
            return False
        try:
            at = self.signouts.signed_out_at(session.member)
        except Exception:
            logger.exception("dashboard: cannot read the sign-outs; the session is refused")
            return True
        return at is not None and session.issued_ms <= at

    @property
    def kind(self) -> str:
        if self.one_time is not None:
            return "link"
        if self.members is not None and self.members.requires_token:
            return "token"
        return "closed" if self.member_source else "open"

    def current(self, session: Session, signer: Signer) -> Member | None:
        """The member a valid cookie stands for now, or ``None`` (removed, token rotated)."""
        if self.kind == "closed" or self.signed_out(session):
            return None
        if self.kind != "token":
            ok = session.member == self.local_member and session.fingerprint == LOCAL_FINGERPRINT
            return Member(self.local_member) if ok else None
        assert self.members is not None
        found = self.members.lookup(session.member)
        if found is None:
            return None
        digest, member = found
        return member if signer.fingerprint(digest) == session.fingerprint else None


class Dashboard:
    """The dashboard of one host; ``app()`` is the ASGI app to mount at ``/ui``."""

    def __init__(self, host: Host, *, signer: Signer, sign_in: SignIn) -> None:
        self.host = host
        self.signer = signer
        self.sign_in = sign_in
        self.views = collect_views(host)
        self.env = environment({name: v.templates for name, v in self.views.items() if v.templates})

    # --- who may do what -------------------------------------------------------------------

    def served_spec(self, plugin: str, tool: str) -> ToolSpec | None:
        """The served tool of ``plugin`` whose own (unprefixed) name is ``tool``."""
        selection = self.host.loaded.profile.tools.get(plugin)
        name = (selection.prefix if selection else "") + tool
        spec = self.host.tools.get(name)
        return spec if spec is not None and spec.plugin == plugin else None

    def allows(self, member: Member, plugin: str, tool: str) -> bool:
        """Whether the member may use the plugin's tool: the host's access policy answers, as it
        does for the call the page or action then makes (so no link leads to a refusal)."""
        spec = self.served_spec(plugin, tool)
        return spec is not None and self.host.access.may(member, spec.name)

    def opens(self, member: Member, plugin: str, path: str) -> bool:
        """Whether ``member`` may open the page of ``plugin`` at ``path`` (a query after ``?`` aside):
        a page links only where this holds, so no link leads to a 403."""
        views = self.views.get(plugin)
        page = views.pages.get(path.partition("?")[0]) if views is not None else None
        return page is not None and self.allows(member, plugin, page[2])

    def link(self, viewer: Member, plugin: str, path: str, /, **query: str | int | None) -> str | None:
        """The URL of that page for ``viewer``, or ``None`` when they may not open it."""
        return self.url(plugin, path, **query) if self.opens(viewer, plugin, path) else None

    def spec_of_function(self, plugin: str, function: Callable[..., Any]) -> ToolSpec | None:
        for spec in self.host.tools.values():
            if spec.plugin == plugin and spec.function is function:
                return spec
        return None

    # --- the app ----------------------------------------------------------------------------

    def app(self) -> ASGIApp:
        from starlette.applications import Starlette
        from starlette.routing import Mount, Route
        from starlette.staticfiles import StaticFiles

        routes: list[Any] = [
            Route("/", self.overview_page, methods=["GET", "HEAD"]),
            Route("/signin", self.signin, methods=["GET", "HEAD", "POST"]),
            Route("/signout", self.signout, methods=["POST"]),
            Route("/members", self.members_page, methods=["GET", "HEAD"]),
            Mount("/static/host", app=StaticFiles(directory=STATIC), name="static"),
        ]
        for name, views in self.views.items():
            if views.static is not None:
                routes.append(Mount(f"/static/{name}", app=StaticFiles(directory=views.static)))
        routes.append(Route("/{plugin}{path:path}", self.plugin_view, methods=["GET", "HEAD", "POST"]))
        app = Starlette(routes=routes, exception_handlers={404: self.not_found, 405: self.not_allowed})
        return SecurityHeaders(app)

    # --- requests ---------------------------------------------------------------------------

    def language_of(self, request: Request) -> Language:
        chosen = request.cookies.get(LANGUAGE_COOKIE)
        return chosen if chosen in ("zh", "en") else self.host.language  # type: ignore[return-value]

    def member_of(self, request: Request) -> tuple[Member, Session] | None:
        cookie = request.cookies.get(SESSION_COOKIE)
        session = self.signer.read_session(cookie) if cookie else None
        if session is None:
            return None
        member = self.sign_in.current(session, self.signer)
        return (member, session) if member is not None else None

    def _language_switch(self, request: Request) -> Response | None:
        """``?lang=zh`` on any GET: keep the choice in a cookie, go back to the same URL without it."""
        from starlette.responses import RedirectResponse

        wanted = request.query_params.get("lang")
        if request.method != "GET" or wanted not in ("zh", "en"):
            return None
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
        target = request.url.path + ("?" + urllib.parse.urlencode(query) if query else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            LANGUAGE_COOKIE, wanted, max_age=365 * 86400, path=BASE, httponly=True, samesite="strict"
        )
        return response

    async def _form(self, request: Request) -> dict[str, str] | None:
        """A urlencoded POST's fields; ``None`` for another content type."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return None
        body = (await request.body()).decode("utf-8", errors="replace")
        return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))

    def _signin_redirect(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{BASE}/signin?{urllib.parse.urlencode({'next': here})}", status_code=303)

    def _member_page(self, request: Request) -> tuple[Member, Session, Language] | Response:
        """What a page for signed-in members does first: answer a ``?lang`` switch, or send a visitor
        to sign in; otherwise the member, their session and the page's language."""
        if (switched := self._language_switch(request)) is not None:
            return switched
        signed = self.member_of(request)
        if signed is None:
            return self._signin_redirect(request)
        member, session = signed
        return member, session, self.language_of(request)

    # --- pages of the host ------------------------------------------------------------------

    def plugin_label(self, name: str, language: str) -> str:
        """What a page names a plugin: the title of its first navigation page, in the page's
        language (a zh page shows 记忆, not ``memory``); its name when it has none."""
        views = self.views.get(name)
        for _, page_title, _, in_nav in views.pages.values() if views is not None else ():
            if in_nav:
                return render(page_title, language) or name
        return name

    async def overview_page(self, request: Request) -> Response:
        return await overview.overview_page(self, request)

    async def members_page(self, request: Request) -> Response:
        return await overview.members_page(self, request)

    async def signin(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        if (switched := self._language_switch(request)) is not None:
            return switched
        language = self.language_of(request)
        target = self._safe_next(request.query_params.get("next"))
        kind = self.sign_in.kind
        if kind == "link":
            assert self.sign_in.one_time is not None
            presented = request.query_params.get("token", "")
            if presented and request.method == "GET":
                if not self.sign_in.one_time.redeem(presented):
                    logger.warning("refused a dashboard sign-in link that was used before or is wrong")
                    return self._signin_page(request, language, failed="link", status=403)
                logger.info("dashboard: signed in with the one-time link")
                return self._signed_in(request, self.sign_in.local_member, LOCAL_FINGERPRINT, target)
            if self.member_of(request) is not None:
                return RedirectResponse(target, status_code=303)
            return self._signin_page(request, language)
        if request.method != "POST":
            if self.member_of(request) is not None:
                return RedirectResponse(target, status_code=303)
            return self._signin_page(request, language)
        form = await self._form(request)
        if form is None or not self.signer.check_signin_form(form.get(CSRF_FIELD, "")):
            return self._signin_page(request, language, failed="csrf", status=403)
        target = self._safe_next(form.get("next"))
        if kind == "open":
            return self._signed_in(request, self.sign_in.local_member, LOCAL_FINGERPRINT, target)
        if kind == "closed":
            return self._signin_page(request, language, status=403)
        assert self.sign_in.members is not None
        from hostd.team.members import token_digest

        token = form.get("token", "").strip()
        member = self.sign_in.members.identify(token) if token else None
        if member is None:
            logger.info("dashboard: refused a sign-in with an unknown token")
            return self._signin_page(request, language, failed="token", status=401)
        logger.info("dashboard: member %s signed in", member.name)
        return self._signed_in(request, member.name, self.signer.fingerprint(token_digest(token)), target)

    def _safe_next(self, target: str | None) -> str:
        """Only a path of the dashboard itself (never another site, never ``//host``)."""
        inside = target is not None and target.startswith(BASE + "/") and "\\" not in target
        if inside and target is not None and not target.startswith(f"{BASE}/signin"):
            return target
        return f"{BASE}/"

    def _signed_in(self, request: Request, member: str, fingerprint: str, target: str) -> Response:
        from starlette.responses import RedirectResponse

        response = RedirectResponse(target, status_code=303)  # the token leaves the address bar here
        # Behind a balancer that ends TLS (deploy/nginx.conf sets X-Forwarded-Proto), the cookie
        # is marked Secure: the browser then never sends it over plain HTTP.
        secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
        response.set_cookie(
            SESSION_COOKIE,
            self.signer.session_cookie(member, fingerprint),
            path=BASE,
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        return response

    def _signin_page(
        self, request: Request, language: Language, *, failed: str | None = None, status: int = 200
    ) -> Response:
        body = self.env.get_template("host/signin.html").render(
            t=lambda en, zh: Text(en=en, zh=zh).render(language),
            kind=self.sign_in.kind,
            failed=failed,
            local_member=self.sign_in.local_member,
            csrf=self.signer.signin_form_token(),
            next=self._safe_next(request.query_params.get("next")),
            action=f"{BASE}/signin",
        )
        title = Text(en="Sign in", zh="登录").render(language)
        return self.layout(request, language, None, None, title, body, status=status)

    async def signout(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        signed = self.member_of(request)
        form = await self._form(request)
        if (
            signed is None
            or form is None
            or not self.signer.check_csrf(signed[1].session_id, form.get(CSRF_FIELD, ""))
        ):
            return self.error_page(request, 403, self._forbidden_text(), None)
        if self.sign_in.signouts is not None:  # every copy of the cookie ends too, on every replica
            import anyio

            await anyio.to_thread.run_sync(self.sign_in.signouts.sign_out, signed[0].name)
            logger.info("dashboard: member %s signed out", signed[0].name)
        response = RedirectResponse(f"{BASE}/signin", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=BASE, httponly=True, samesite="strict")
        return response

    # --- the plugins' pages -------------------------------------------------------------------

    async def plugin_view(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        plugin = request.path_params["plugin"]
        path = request.path_params["path"]
        views = self.views.get(plugin)
        if views is None:
            return await self.not_found(request, None)
        if (switched := self._language_switch(request)) is not None:
            return switched
        signed = self.member_of(request)
        language = self.language_of(request)
        if request.method == "POST":
            action = views.actions.get(path)
            if action is None:
                return await self.not_found(request, None)
            if signed is None:
                return self.error_page(request, 403, self._forbidden_text(), None)
            member, session = signed
            form = await self._form(request)
            if form is None or not self.signer.check_csrf(session.session_id, form.pop(CSRF_FIELD, "")):
                logger.info("dashboard: refused a POST to %s without a valid CSRF token", request.url.path)
                return self.error_page(request, 403, self._forbidden_text(), (member, session))
            handle, tool = action
            if not self.allows(member, plugin, tool):
                logger.info(
                    "dashboard: member %s may not use %s (POST %s)", member.name, tool, request.url.path
                )
                self.host.pipeline.record_refused_request("ui", member, "PERMISSION_DENIED", tool)
                return self.error_page(request, 403, self._forbidden_text(), (member, session))
            if (limited := await self._over_request_rate(request, member, session)) is not None:
                return limited
            view_request = DashboardRequest(self, request, plugin, member, language, form)
            return await self._answer(request, view_request, handle, session, active=plugin)
        page = views.pages.get(path)
        if page is None:
            if not path.endswith("/") or path.rstrip("/") not in views.pages:
                return await self.not_found(request, signed)
            return RedirectResponse(self.url(plugin, path.rstrip("/")), status_code=308)
        if signed is None:
            return self._signin_redirect(request)
        member, session = signed
        render_page, _, tool, _ = page
        if not self.allows(member, plugin, tool):
            self.host.pipeline.record_refused_request("ui", member, "PERMISSION_DENIED", tool)
            return self.error_page(request, 403, self._forbidden_text(), signed)
        if (limited := await self._over_request_rate(request, member, session)) is not None:
            return limited
        view_request = DashboardRequest(self, request, plugin, member, language, {})
        return await self._answer(request, view_request, render_page, session, active=plugin)

    async def _over_request_rate(self, request: Request, member: Member, session: Session) -> Response | None:
        """429 when the member's request rate (``limits.per_member.requests_per_minute``) is used
        up: a page or an action is a request of theirs like an MCP one, from the same bucket."""
        wait = await self.host.pipeline.request_wait(member)
        if not wait:
            return None
        self.host.pipeline.record_refused_request("ui", member, "RATE_LIMITED")
        text = Text(
            en=f"Too many requests (limits.per_member.requests_per_minute); retry in {wait} s.",
            zh=f"请求过多（limits.per_member.requests_per_minute）；请在 {wait} 秒后重试。",
        )
        response = self.error_page(request, 429, text, (member, session), code="RATE_LIMITED")
        response.headers["Retry-After"] = str(wait)
        return response

    async def _answer(
        self,
        request: Request,
        view_request: DashboardRequest,
        function: PageRender,
        session: Session,
        *,
        active: str,
    ) -> Response:
        from starlette.responses import RedirectResponse

        language, member = view_request.language, view_request.member_record
        try:
            answer = await function(view_request)
        except CodedError as exc:
            message, hint, _ = exc.rendered(language)
            return self.error_page(
                request, STATUS_OF_CODE.get(exc.code, 500), message, (member, session), hint, exc.code
            )
        except Exception:
            logger.exception("dashboard page %s failed", request.url.path)
            text = Text(
                en="This page failed unexpectedly; the details are in the server's log.",
                zh="页面发生意外错误，详情见服务器日志。",
            ).render(language)
            return self.error_page(request, 500, text, (member, session))
        if isinstance(answer, ViewRedirect):
            response = RedirectResponse(
                self.url(view_request.plugin, answer.path, **answer.query), status_code=303
            )
            if answer.notice is not None:
                notice = (render(answer.notice, language) or "")[:400]
                response.set_cookie(
                    NOTICE_COOKIE,
                    base64.urlsafe_b64encode(notice.encode()).decode(),
                    path=BASE,
                    httponly=True,
                    samesite="strict",
                )
            return response
        if isinstance(answer, ViewFile):
            return download(answer)
        plugin = view_request.plugin
        body = self.env.get_template(f"{plugin}/{answer.template}").render(
            **self._helpers(request, language, session, member, plugin), **answer.data
        )
        scripts = [f"{BASE}/static/{plugin}/{name}" for name in answer.scripts]
        return self.layout(
            request,
            language,
            member,
            session,
            render(answer.title, language) or "",
            body,
            active=active,
            status=answer.status,
            diagram=answer.diagram,
            scripts=scripts,
        )

    # --- layout and errors ----------------------------------------------------------------

    def url(self, plugin: str, path: str = "", **query: str | int | None) -> str:
        kept = [(k, str(v)) for k, v in query.items() if v is not None and v != ""]
        return f"{BASE}/{plugin}{path}" + ("?" + urllib.parse.urlencode(kept) if kept else "")

    def _helpers(
        self, request: Request, language: Language, session: Session, member: Member, plugin: str | None
    ) -> dict[str, Any]:
        from markupsafe import Markup, escape

        token = self.signer.csrf_token(session.session_id)

        def csrf_field() -> Markup:
            return Markup(f'<input type="hidden" name="{CSRF_FIELD}" value="{escape(token)}">')

        def url(path: str = "", **query: str | int | None) -> str:
            return self.url(plugin or "", path, **query) if plugin else f"{BASE}/"

        def can(tool: str) -> bool:
            return plugin is not None and self.allows(member, plugin, tool)

        def opens(path: str = "", other: str | None = None) -> bool:
            """Whether the member may open this plugin's page at ``path`` (or ``other`` plugin's)."""
            return self.opens(member, other or plugin or "", path)

        def here(**changes: str | int | None) -> str:
            """This page's URL with some query parameters changed (``None`` removes one)."""
            query = dict(request.query_params)
            query.update({k: str(v) for k, v in changes.items() if v is not None})
            for key, value in changes.items():
                if value is None:
                    query.pop(key, None)
            return request.url.path + ("?" + urllib.parse.urlencode(query) if query else "")

        return {
            "t": lambda en, zh: Text(en=en, zh=zh).render(language),
            "text": lambda message: render(message, language) or "",
            "csrf_field": csrf_field,
            "url": url,
            "can": can,
            "opens": opens,
            "here": here,
            "member": member.name,
            "language": language,
        }

    def layout(
        self,
        request: Request,
        language: Language,
        member: Member | None,
        session: Session | None,
        title: str,
        body: str,
        *,
        active: str | None = None,
        status: int = 200,
        diagram: bool = False,
        scripts: list[str] | None = None,
    ) -> Response:
        from markupsafe import Markup
        from starlette.responses import HTMLResponse

        nav: list[tuple[str, str, bool]] = []
        if member is not None:
            nav.append((Text(en="Overview", zh="概览").render(language), f"{BASE}/", active == ""))
            if self.sign_in.kind == "token":
                nav.append(
                    (Text(en="Members", zh="成员").render(language), f"{BASE}/members", active == "/members")
                )
            for name, views in self.views.items():
                for path, (_, page_title, tool, in_nav) in views.pages.items():
                    if in_nav and self.allows(member, name, tool):
                        nav.append(
                            (render(page_title, language) or name, self.url(name, path), active == name)
                        )
        notice = None
        raw_notice = request.cookies.get(NOTICE_COOKIE)
        if raw_notice:
            try:
                notice = base64.urlsafe_b64decode(raw_notice.encode()).decode()[:400]
            except ValueError:
                notice = None
        query = [(k, v) for k, v in request.query_params.multi_items() if k not in ("lang", "token")]

        def switch(lang: str) -> str:
            return request.url.path + "?" + urllib.parse.urlencode([*query, ("lang", lang)])

        page = self.env.get_template("host/layout.html").render(
            t=lambda en, zh: Text(en=en, zh=zh).render(language),
            language=language,
            title=title,
            body=Markup(body),  # rendered by an autoescaping template
            nav=nav,
            member=member.name if member else None,
            csrf=self.signer.csrf_token(session.session_id) if session else "",
            notice=notice,
            diagram=diagram,
            style=page_style()[0],
            scripts=scripts or [],
            switch_zh=switch("zh"),
            switch_en=switch("en"),
            base=BASE,
        )
        response = HTMLResponse(page, status_code=status)
        response.headers["Content-Security-Policy"] = content_security_policy(diagram)
        response.headers["Cache-Control"] = "no-store"
        if notice is not None:
            response.delete_cookie(NOTICE_COOKIE, path=BASE, httponly=True, samesite="strict")
        return response

    def _forbidden_text(self) -> Message:
        return Text(
            en="Not allowed: your profile does not serve this, or the form is stale (reload the page).",
            zh="不允许：你的配置档不提供此操作，或表单已过期（请重新加载页面）。",
        )

    def error_page(
        self,
        request: Request,
        status: int,
        message: Message,
        signed: tuple[Member, Session] | None,
        hint: str | None = None,
        code: str | None = None,
    ) -> Response:
        language = self.language_of(request)
        member, session = signed if signed else (None, None)
        titles = {
            400: ("Bad request", "请求有误"),
            401: ("Sign in first", "请先登录"),
            403: ("Not allowed", "不允许"),
            404: ("Not found", "未找到"),
            405: ("Method not allowed", "不支持该请求方法"),
            409: ("Conflict", "冲突"),
            429: ("Too many requests", "请求过多"),
        }
        en, zh = titles.get(status, ("Something went wrong", "出错了"))
        title = Text(en=en, zh=zh).render(language)
        body = self.env.get_template("host/error.html").render(
            t=lambda en, zh: Text(en=en, zh=zh).render(language),
            title=title,
            message=render(message, language),
            hint=hint,
            code=code,
            status=status,
            base=BASE,
        )
        return self.layout(request, language, member, session, title, body, status=status)

    async def not_found(self, request: Request, exc: Any) -> Response:
        signed = self.member_of(request)
        text = Text(en="There is no such page.", zh="没有这个页面。")
        return self.error_page(request, 404, text, signed)

    async def not_allowed(self, request: Request, exc: Any) -> Response:
        text = Text(en="This address does not take that method.", zh="该地址不接受此请求方法。")
        return self.error_page(request, 405, text, self.member_of(request))
