"""The dashboard's fixed names: where it is mounted, its cookies and form fields, and the HTTP
status each error code is shown with."""

BASE = "/ui"
SESSION_COOKIE = "hostd_ui"
LANGUAGE_COOKIE = "hostd_lang"
NOTICE_COOKIE = "hostd_notice"
CSRF_FIELD = "csrf"
LOCAL_FINGERPRINT = "local"
FEED_LIMIT = 30

STATUS_OF_CODE = {
    "INVALID_ARGUMENT": 400,
    "EMPTY_INPUT": 400,
    "TOO_LONG": 400,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "CONFLICT": 409,
    "PERMISSION_DENIED": 403,
    "FILE_LOCKED": 503,
    "TIMEOUT": 504,
    "RATE_LIMITED": 429,
}
