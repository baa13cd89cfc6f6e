"""Where the dashboard runs: ``hostd web`` on 127.0.0.1, or ``/ui`` of the HTTP transport.

``hostd web`` signs its user in with a one-time link (a token in the URL, exchanged for a
cookie and dropped from the address at once, as notebook servers do). On the HTTP transport
members sign in with their own token; the cookie is signed with the replicas' shared
``state_secret_env`` secret when there is one, so every replica accepts it.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from hostd.core.icon import favicon_route
from hostd.core.identity import local_member
from hostd.web.app import Dashboard, SignIn
from hostd.web.constants import BASE
from hostd.web.signing import OneTimeToken, Signer

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from hostd.core.config import TransportConfig
    from hostd.core.host import Host
    from hostd.protocol.guard import HttpPolicy

logger = logging.getLogger("hostd.web")


def team_dashboard(host: Host, transport: TransportConfig, policy: HttpPolicy) -> ASGIApp:
    """The dashboard for ``/ui`` of the HTTP transport (``transport.dashboard: true``)."""
    secret = os.environ.get(transport.state_secret_env, "") if transport.state_secret_env else ""
    if not secret:
        logger.warning(
            "dashboard cookies are signed with a key of this process: behind a load balancer set "
            "transport.state_secret_env so every replica accepts them"
        )
    from hostd.core.config import LOOPBACK_HOSTS

    member_source = policy.requires_token or transport.host not in LOOPBACK_HOSTS
    from hostd.team.signouts import sign_outs_for

    sign_in = SignIn(
        local_member=local_member(),
        members=policy.members,
        member_source=member_source,
        signouts=sign_outs_for(host),
    )
    return Dashboard(host, signer=Signer(secret.encode() or None), sign_in=sign_in).app()


def dashboard_app(host: Host, *, signer: Signer, sign_in: SignIn, policy: HttpPolicy) -> ASGIApp:
    """The dashboard alone at ``/ui`` (``/`` sends there), behind the transport's guard."""
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    from hostd.protocol.guard import GuardMiddleware

    dashboard = Dashboard(host, signer=signer, sign_in=sign_in)

    async def root(request: Any) -> RedirectResponse:
        return RedirectResponse(f"{BASE}/", status_code=303)

    app = Starlette(routes=[Route("/", root), favicon_route(), Mount(BASE, app=dashboard.app())])
    return GuardMiddleware(app, policy, cookie_prefix=BASE)


def local_app(host: Host, one_time: OneTimeToken, policy: HttpPolicy) -> ASGIApp:
    """``hostd web``'s whole app: signed in by the one-time link, keyed per process."""
    from hostd.team.signouts import MemorySignOuts

    sign_in = SignIn(local_member=local_member(), one_time=one_time, signouts=MemorySignOuts())
    return dashboard_app(host, signer=Signer(None), sign_in=sign_in, policy=policy)


def serve_local_dashboard(host: Host, *, port: int, open_browser: bool) -> int:
    """Serve until Ctrl-C; print the sign-in link on stdout and open it unless told not to."""
    import uvicorn

    from hostd.core.config import TransportConfig
    from hostd.core.runtime import EXIT_OK, require_current_schemas, run_async
    from hostd.protocol.guard import HttpPolicy
    from hostd.protocol.http import guarded_protocol

    transport = TransportConfig(type="http", host="127.0.0.1", port=port)
    policy = HttpPolicy(transport, host.language)
    storage = host.loaded.config.storage
    if storage is not None:
        require_current_schemas(host.prepare_team_databases(migrate=storage.migrate))
        from hostd.protocol.subscriptions import ResourceChanges

        # What a page changes reaches the subscribers of the team's servers (LISTEN/NOTIFY).
        host.changes = ResourceChanges.for_config(host.loaded)
    one_time = OneTimeToken()
    app = local_app(host, one_time, policy)
    from hostd.core.environment import bind_listener

    listener = bind_listener("127.0.0.1", port, "--port")  # in use: one line, exit 3
    bound = listener.getsockname()[1]
    url = f"http://127.0.0.1:{bound}{BASE}/signin?token={one_time.token}"
    config = uvicorn.Config(
        app,
        http=guarded_protocol(policy),
        log_level="warning",
        lifespan="off",
        access_log=False,  # the sign-in link carries the token: no request is logged
        server_header=False,
    )
    server = uvicorn.Server(config)
    host.startup()
    try:
        print(f"hostd dashboard for profile {host.loaded.profile_name}: open {url}", flush=True)
        print("(the link signs you in once; Ctrl-C stops the dashboard)", flush=True)
        if open_browser:
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
        from hostd.protocol.subscriptions import run_with_changes

        run_async(run_with_changes, host.changes, server.serve, [listener])
    except KeyboardInterrupt:
        pass
    finally:
        host.shutdown()
        listener.close()
    return EXIT_OK
