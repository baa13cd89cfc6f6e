"""The core: the host (plugins of one profile, their contexts, tools, resources and prompts), the
config, the call pipeline and access policy every surface goes through, and the types behind the
plugin API. The core never imports a wing (``protocol``, ``team``, ``web``, ``cli``) at module level.
"""
