"""The owner of a MetaCortex server: passphrase, sign-in, session, secure pages.

Small API, reused by the OAuth consent page (``metacortex.auth``) and later
owner pages:

- ``set_passphrase(store, passphrase)`` / ``verify_passphrase(store, passphrase)``
  / ``is_set(store)``: the passphrase, stored only as an argon2id hash
  (``metacortex owner set-passphrase`` sets it).
- ``OwnerWeb(settings, store_of, page_templates=None)``: the sign-in pages for one
  app (``store_of()`` returns the store once the app has started).
  ``.routes()`` mounts ``/owner/sign-in``, ``/owner/sign-out`` and the stylesheet;
  ``await .session(request)`` is the signed-in owner's ``Session`` (with its CSRF
  token, ``session.csrf_matches(form_value)``) or None; ``.sign_in_page(request,
  next_url)`` shows the sign-in form that returns to ``next_url``;
  ``.render(request, template, context, form_targets=())`` renders a page with the
  strict headers (CSP ``default-src 'none'``, ``frame-ancestors 'none'``,
  ``no-store``).
- The layout is the console's: ``base.py`` (``OwnerBase``: sessions, rendering,
  cookies, the attempt budget), the page modules ``sign_in.py`` and
  ``invitation_pages.py``, and ``web.py`` (``OwnerWeb``: their routes).
- ``templates(extra_directory)``: Jinja2 templates whose ``base.html`` layout
  (accessible, phone-width, no script, one same-origin stylesheet) other packages
  extend.

Cookies are HttpOnly and ``SameSite=Strict``, ``Secure`` with the ``__Host-``
prefix when the public URL is https. Sign-in is rate limited (5 per minute per
address, 30 overall); a browser that signed in before has its own budget (5 per
minute) through its device cookie (``owner/devices.py``).
"""

from metacortex.owner.base import public_base, security_headers, templates
from metacortex.owner.passphrase import (
    is_set,
    passphrase_weakness,
    set_passphrase,
    verify_passphrase,
)
from metacortex.owner.sessions import Session
from metacortex.owner.web import OwnerWeb

__all__ = [
    "OwnerWeb",
    "Session",
    "is_set",
    "passphrase_weakness",
    "public_base",
    "security_headers",
    "set_passphrase",
    "templates",
    "verify_passphrase",
]
