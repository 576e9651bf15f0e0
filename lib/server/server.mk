# lib/server/server.mk - what the server backends share (server.h): their
# connections per thread, their requests' deadlines, and what they tell
# of a server that does not answer, the %-encoding of the values in its
# address; and the credentials a space names (secret.h).  In the
# library, for the backends it loads.  Needs the core.
#   adds to: LIB_SRCS (lib/lib.mk)

LIB_SRCS += lib/server/conn_cache.c lib/server/secret.c lib/server/server_notice.c lib/server/server_wait.c \
	lib/server/url_text.c
