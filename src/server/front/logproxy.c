/* SPDX-License-Identifier: Apache-2.0 */
/* The log proxy (logproxy.h): one thread drives every log read with libcurl's multi
 * interface. HTTP threads hand reads over and go on serving; the proxy resumes each
 * client's connection once its answer is set. */
#include "server/front/logproxy.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

typedef struct item {
  gp_srv_req *r;
  CURL *h;
  struct curl_slist *hdrs;
  gp_buf body;
  struct item *next;
} item;

struct gp_srv_proxy {
  pthread_t thread;
  pthread_mutex_t lock;
  CURLM *multi;
  item *incoming; /* taken by an HTTP thread, not yet added (under lock) */
  int count;      /* taken and not yet answered (under lock) */
  bool stopping;  /* under lock */
  bool joined;
  item *active;   /* the proxy thread's own */
  gp_tls_dial dial;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
  item *it = ud;
  gp_buf_append(&it->body, p, size * n);
  return it->body.truncated ? 0 : size * n;
}

static item *item_new(const gp_srv_proxy *p, gp_srv_req *r) {
  const char *spec = r->proxy_url;
  const char *nl = strchr(spec, '\n');
  size_t ulen = nl ? (size_t)(nl - spec) : strlen(spec);
  char *url = gp_xmalloc(ulen + 1);
  memcpy(url, spec, ulen);
  url[ulen] = '\0';
  char auth[700];
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", nl ? nl + 1 : "");
  item *it = gp_xcalloc(1, sizeof *it);
  it->r = r;
  it->h = curl_easy_init();
  if (!it->h) {
    free(url);
    free(it);
    return NULL;
  }
  gp_buf_init(&it->body, GP_SRV_MAX_BODY * 4);
  it->hdrs = curl_slist_append(NULL, auth);
  curl_easy_setopt(it->h, CURLOPT_URL, url);
  free(url); /* libcurl keeps its own copy */
  curl_easy_setopt(it->h, CURLOPT_TIMEOUT_MS, GP_SRV_PROXY_TIMEOUT_MS);
  curl_easy_setopt(it->h, CURLOPT_CONNECTTIMEOUT_MS, GP_SRV_PROXY_CONNECT_MS);
  curl_easy_setopt(it->h, CURLOPT_NOSIGNAL, 1L);
  gp_tls_dial_setup(it->h, &p->dial); /* fails only without TLS support; checks stay on */
  curl_easy_setopt(it->h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(it->h, CURLOPT_WRITEDATA, it);
  curl_easy_setopt(it->h, CURLOPT_HTTPHEADER, it->hdrs);
  curl_easy_setopt(it->h, CURLOPT_PRIVATE, it);
  return it;
}

/* Sets the client's answer from the agent's, frees the item and resumes the client. */
static void finish(gp_srv_proxy *p, item *it, CURLcode cc, bool stopping) {
  gp_srv_req *r = it->r;
  long code = 0;
  curl_easy_getinfo(it->h, CURLINFO_RESPONSE_CODE, &code);
  free(r->proxy_url);
  r->proxy_url = NULL;
  if (stopping) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "the server is shutting down");
  } else if (cc != CURLE_OK) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "the node's agent did not answer: %s",
                        curl_easy_strerror(cc));
  } else if (code == 200) {
    free(r->resp);
    r->resp = gp_xstrdup(it->body.data ? it->body.data : "");
    r->status = 200;
    r->answered = true;
  } else if (code == 404) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "the agent has no log for this job");
  } else {
    gp__srv_reply_error(r, 502, "bad_gateway", NULL, "the agent answered with an error (%ld)", code);
  }
  curl_multi_remove_handle(p->multi, it->h);
  curl_easy_cleanup(it->h);
  curl_slist_free_all(it->hdrs);
  gp_buf_done(&it->body);
  free(it);
  pthread_mutex_lock(&p->lock);
  p->count--;
  pthread_mutex_unlock(&p->lock);
  MHD_resume_connection(r->conn);
}

static void unlink_active(gp_srv_proxy *p, item *it) {
  for (item **pp = &p->active; *pp; pp = &(*pp)->next)
    if (*pp == it) {
      *pp = it->next;
      return;
    }
}

static void *proxy_main(void *arg) {
  gp_srv_proxy *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    item *in = p->incoming;
    p->incoming = NULL;
    bool stop = p->stopping;
    pthread_mutex_unlock(&p->lock);
    while (in) {
      item *next = in->next;
      in->next = p->active;
      p->active = in;
      curl_multi_add_handle(p->multi, in->h);
      in = next;
    }
    if (stop) break;
    int running = 0, left = 0;
    curl_multi_perform(p->multi, &running);
    CURLMsg *m;
    while ((m = curl_multi_info_read(p->multi, &left))) {
      if (m->msg != CURLMSG_DONE) continue;
      item *it = NULL;
      CURLcode cc = m->data.result;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&it);
      unlink_active(p, it);
      finish(p, it, cc, false);
    }
    curl_multi_poll(p->multi, NULL, 0, 1000, NULL);
  }
  while (p->active) {
    item *it = p->active;
    p->active = it->next;
    finish(p, it, CURLE_OK, true);
  }
  return NULL;
}

gp_srv_proxy *gp__srv_proxy_new(const gp_tls_dial *dial) {
  gp_srv_proxy *p = gp_xcalloc(1, sizeof *p);
  p->dial = *dial;
  p->multi = curl_multi_init();
  if (!p->multi) {
    free(p);
    return NULL;
  }
  /* A few connections per agent; more reads to one agent wait their turn inside libcurl. */
  curl_multi_setopt(p->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 4L);
  pthread_mutex_init(&p->lock, NULL);
  if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
    pthread_mutex_destroy(&p->lock);
    curl_multi_cleanup(p->multi);
    free(p);
    return NULL;
  }
  return p;
}

bool gp__srv_proxy_take(gp_srv_proxy *p, gp_srv_req *r) {
  pthread_mutex_lock(&p->lock);
  if (p->stopping || p->count >= GP_SRV_PROXY_MAX) {
    pthread_mutex_unlock(&p->lock);
    return false;
  }
  item *it = item_new(p, r);
  if (!it) {
    pthread_mutex_unlock(&p->lock);
    return false;
  }
  it->next = p->incoming;
  p->incoming = it;
  p->count++;
  pthread_mutex_unlock(&p->lock);
  curl_multi_wakeup(p->multi);
  return true;
}

void gp__srv_proxy_stop(gp_srv_proxy *p) {
  if (!p || p->joined) return;
  pthread_mutex_lock(&p->lock);
  p->stopping = true;
  pthread_mutex_unlock(&p->lock);
  curl_multi_wakeup(p->multi);
  pthread_join(p->thread, NULL);
  p->joined = true;
}

void gp__srv_proxy_free(gp_srv_proxy *p) {
  if (!p) return;
  gp__srv_proxy_stop(p);
  curl_multi_cleanup(p->multi);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
