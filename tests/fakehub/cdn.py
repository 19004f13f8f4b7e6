"""The CDN host of the fake hub: signed, expiring URLs to file bytes by sha256.

Like the S3/CloudFront hosts behind the real Hub: the URL carries its own
authorisation (an HMAC over the path and expiry), a forged or expired one gets
403 with an XML body, and the ETag is not the sha256 (the real bridge answers
its Xet hash), so a mirror must take the identity from the resolve answer.
"""

import hashlib
import time
from urllib.parse import quote

from httpbase import Answered


def xml_error(h, status, code, message):
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            '</Error>' % (code, message)).encode()
    h.send_bytes(status, body, [], "application/xml")
    raise Answered()


def handle(h):
    segs = h.segments
    if len(segs) == 3 and segs[:2] == ["xorbs", "default"]:
        import xetcas
        return xetcas.xorb_bytes(h, segs[2])
    if len(segs) < 2 or segs[0] != "repos":
        xml_error(h, 404, "NoSuchKey", "The specified key does not exist.")
    app = h.app
    expires, ttl, signature = h.q("Expires", ""), h.q("X-Amz-Expires", ""), h.q("X-Amz-Signature")
    if not signature or signature != app.sign(h.raw_path, expires, ttl):
        xml_error(h, 403, "SignatureDoesNotMatch",
                  "The request signature we calculated does not match the signature you provided.")
    if not expires.isdigit() or int(expires) < time.time():
        xml_error(h, 403, "AccessDenied", "Request has expired")
    if app.config.cdn_reject_auth and h.headers.get("Authorization"):
        xml_error(h, 400, "InvalidArgument", "Only one auth mechanism allowed; only the "
                  "X-Amz-Algorithm query parameter, Signature query string parameter or the "
                  "Authorization header should be specified")
    sha256 = segs[-1]
    blob = app.world.store.by_sha256(sha256)
    if blob is None:
        xml_error(h, 404, "NoSuchKey", "The specified key does not exist.")
    headers = [("ETag", '"%s"' % hashlib.sha256(b"xet:" + sha256.encode()).hexdigest()),
               ("Accept-Ranges", "bytes"),
               ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
               ("Cache-Control", "public, max-age=604800, immutable"),
               ("Access-Control-Allow-Origin", "*"),
               ("X-Cache", "Miss from cloudfront")]
    disposition = h.q("response-content-disposition")
    if disposition:
        headers.append(("Content-Disposition", disposition))
    h.send_blob(blob, headers, "binary/octet-stream")


def signed_url(app, repo, f):
    """The absolute, signed, expiring CDN URL of a file's bytes."""
    rh = hashlib.sha256(("%s/%s/%s" % (repo.hub, repo.type, repo.id)).encode()).hexdigest()
    path = "/repos/%s/%s/%s/%s" % (rh[:2], rh[2:4], rh, f.sha256)
    ttl = str(app.config.cdn_expires)
    expires = str(int(time.time()) + app.config.cdn_expires)
    name = f.path.rsplit("/", 1)[-1]
    disposition = "inline; filename*=UTF-8''%s; filename=\"%s\";" % (quote(name), name.replace('"', ""))
    return "%s%s?response-content-disposition=%s&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=%s" \
           "&X-Amz-SignedHeaders=host&Expires=%s&X-Amz-Signature=%s" % (
               app.cdn_base, path, quote(disposition, safe=""), ttl, expires,
               app.sign(path, expires, ttl))
