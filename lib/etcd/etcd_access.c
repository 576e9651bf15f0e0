/* etcd_access.c - how the etcd backend's requests get in, and what a
 * refusal means: the TLS options of an etcds:// space's requests (libcurl
 * on OpenSSL), and the codes and words of the refusals -- a TLS handshake
 * that failed, the JSON gateway's answers about credentials and
 * permissions.  etcd_http.c asks; nothing here touches the network.
 *
 * TRUST.  An etcds:// request verifies the member's certificate against
 * the address's cacert= (or the system's CAs) and its name against the
 * host given, always (CURLOPT_SSL_VERIFYPEER and VERIFYHOST are set on
 * every request, never turned off); with cert= and key= it presents that
 * client certificate, for members run with --client-cert-auth.  etcd 3.4's
 * JSON gateway refuses a client certificate that carries a Common Name
 * (it would not map it to a user there): a locker's certificate has none,
 * and its user comes from user= and the log-in (etcd_auth.c).
 *
 * REFUSALS are DIRLOCK_EAUTH (TLS: a member certificate not trusted or
 * not naming the host, our certificate refused or asked for, a member
 * that does not speak TLS, or the plain reverse; the cluster's
 * authentication: no user given, a wrong password, a token refused),
 * DIRLOCK_EPERM (the user's roles do not let it read or write under the
 * prefix), DIRLOCK_EINVAL (a file of the address that cannot be used):
 * never tried again, as an unreachable member is (DIRLOCK_ESERVER). */
#include "etcd.h"

#include <stdio.h>
#include <string.h>

void dl_etcd_tls_options(CURL *e, const dl_etcd_url *u, char *errbuf)
{
        errbuf[0] = '\0';
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
        if (!u->tls)
                return;
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
        /* TLS 1.2 only: there a member judges our certificate (or its
         * absence) inside the handshake, and its refusal is the
         * handshake's end.  In TLS 1.3 it judges it after our side of the
         * handshake has ended and our request is sent; Go's server then
         * sends its alert and closes with our request unread, which
         * resets the connection, and the alert may be lost to the reset:
         * a refusal looked like a member gone (DIRLOCK_ESERVER, tried
         * again until the deadline). */
        curl_easy_setopt(e, CURLOPT_SSLVERSION,
                         (long)(CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2));
        if (u->cacert[0] != '\0')
                curl_easy_setopt(e, CURLOPT_CAINFO, u->cacert);
        if (u->cert[0] != '\0') {
                curl_easy_setopt(e, CURLOPT_SSLCERT, u->cert);
                curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
                curl_easy_setopt(e, CURLOPT_SSLKEY, u->key);
                curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
                /* An encrypted key gets no pass phrase (without one,
                 * OpenSSL would ask on the terminal): it fails to load. */
                curl_easy_setopt(e, CURLOPT_KEYPASSWD, "");
        }
}

static bool says(const char *text, const char *words)
{
        return text != NULL && strstr(text, words) != NULL;
}

/* libcurl's words for a TLS failure: the server's alert, or an answer
 * that is not TLS. */
static const char *tls_refusal(const dl_etcd_url *u, const char *errbuf)
{
        /* A member that requires a certificate of a client that has none
         * says "certificate required" (TLS 1.3), or else "handshake
         * failure" or "bad certificate". */
        if (says(errbuf, "alert certificate required") ||
            (!u->cert[0] &&
             (says(errbuf, "alert handshake failure") || says(errbuf, "alert bad certificate"))))
                return "the member asks for a client certificate (cert=FILE&key=FILE)";
        if (says(errbuf, "alert bad certificate") || says(errbuf, "alert unknown ca") ||
            says(errbuf, "alert certificate unknown") || says(errbuf, "alert certificate expired") ||
            says(errbuf, "alert access denied") || says(errbuf, "alert certificate revoked"))
                return "the member refused our client certificate";
        if (says(errbuf, "wrong version number") || says(errbuf, "packet length too long") ||
            says(errbuf, "record layer failure"))
                return "the member does not speak TLS (a plain member: etcd:// there)";
        if (says(errbuf, " alert "))
                return "the member ended the TLS session";
        return NULL;
}

int dl_etcd_transfer_failed(const dl_etcd_url *u, const char *member, CURLcode result, const char *errbuf,
                            bool *next, dirlock_error *err)
{
        const char *words = errbuf != NULL && errbuf[0] ? errbuf : curl_easy_strerror(result);
        *next = false;
        switch (result) {
        case CURLE_PEER_FAILED_VERIFICATION:
                return dl_fail(
                    err, DIRLOCK_EAUTH, 0,
                    "etcd member %s: TLS: the member's certificate is not trusted or does not name "
                    "it (%.200s; CAs: %.200s)",
                    member, words, u->cacert[0] ? u->cacert : "the system's");
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CRL_BADFILE:
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "etcd member %s: TLS: cannot use the CA file or the client certificate and "
                               "key: %.200s",
                               member, words);
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR: {
                /* In TLS 1.3 the member judges our certificate after our
                 * side of the handshake: its alert comes at a read. */
                const char *refusal = tls_refusal(u, errbuf);
                if (refusal != NULL)
                        return dl_fail(err, DIRLOCK_EAUTH, 0, "etcd member %s: TLS: %s (%.200s)", member,
                                       refusal, words);
                break;
        }
        default:
                break;
        }
        *next = true;
        return dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: %.300s", member, words);
}

int dl_etcd_not_json(const char *member, long status, const char *body, bool *next, dirlock_error *err)
{
        *next = false;
        if (status == 400 && says(body, "CommonName of client"))
                return dl_fail(err, DIRLOCK_EAUTH, 0,
                               "etcd member %s: its JSON gateway refuses a client certificate that carries a "
                               "Common Name (etcd 3.4 would not map it to a user there): use a certificate "
                               "without one, and user=NAME&password_file=FILE for the user",
                               member);
        if (status >= 500) {
                *next = true;
                return dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: HTTP status %ld", member, status);
        }
        return dl_fail(err, DIRLOCK_EDATA, 0, "etcd member %s: an answer that is not JSON (HTTP %ld)", member,
                       status);
}

/* Who the space logs in as, for messages: "user 'NAME'" or "nobody". */
static void as_whom(const dl_etcd_url *u, char *buf, size_t size)
{
        if (u->user[0] != '\0')
                snprintf(buf, size, "user '%.127s'", u->user);
        else
                snprintf(buf, size, "%s", "nobody");
}

int dl_etcd_grpc_error(const dl_etcd_url *u, const char *member, int code, const char *text, bool *next,
                       bool *token_refused, dirlock_error *err)
{
        *next = false;
        *token_refused = false;
        char who[160];
        as_whom(u, who, sizeof who);
        switch (code) {
        case 5:  /* NotFound: a lease */
        case 9:  /* FailedPrecondition: a lease that exists; the log-in: authentication is off */
        case 11: /* OutOfRange: a compacted revision */
                return 0;
        case 1:  /* Canceled */
        case 4:  /* DeadlineExceeded */
        case 8:  /* ResourceExhausted: too many requests, no space */
        case 10: /* Aborted */
        case 13: /* Internal */
        case 14: /* Unavailable: no leader, leader changed, timed out, stopping */
                *next = true;
                return dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: %.200s (gRPC code %d)", member, text,
                               code);
        case 3: /* InvalidArgument: the cluster's authentication's answers among others */
                if (says(text, "user name is empty")) {
                        /* With a user named, the token this process keeps
                         * is the empty one of a cluster whose
                         * authentication was off when it logged in: it
                         * logs in again (as for a refused token). */
                        *token_refused = u->user[0] != '\0';
                        return dl_fail(
                            err, DIRLOCK_EAUTH, 0,
                            "etcd member %s: the cluster's authentication is on, and this space logs "
                            "in as %s (add user=NAME&password_file=FILE): %.200s",
                            member, who, text);
                }
                if (says(text, "authentication failed"))
                        return dl_fail(err, DIRLOCK_EAUTH, 0,
                                       "etcd member %s refused the password of %s: %.200s", member, who,
                                       text);
                break;
        case 7: /* PermissionDenied */
                return dl_fail(err, DIRLOCK_EPERM, 0,
                               "etcd member %s: %s may not read or write under '%s/' (a role granting "
                               "readwrite on the prefix is all a locker needs: etcdctl role grant-permission "
                               "--prefix=true ROLE readwrite %s/): %.200s",
                               member, who, u->prefix, u->prefix, text);
        case 16: /* Unauthenticated: a token expired, or unknown to a restarted member */
                *token_refused = true;
                return dl_fail(err, DIRLOCK_EAUTH, 0, "etcd member %s refused the log-in of %s: %.200s",
                               member, who, text);
        default:
                break;
        }
        return dl_fail(err, DIRLOCK_EDATA, 0, "etcd member %s: %.200s (gRPC code %d)", member, text, code);
}
