#!/usr/bin/perl
# cgi-bin/board.pl - seed 001's bulletin board as the article's readers
# wrote it: a plain CGI in Perl that reads the message log, adds the
# message and writes the log back, answering "busy, please wait" when it
# cannot get the lock.  How it locks is a setting (lock_mode):
#   none     no lock: two posts read the same log and one is lost;
#   seed     the article's own lock() and unlock(), as written: mkdir a
#            directory, remove it first if it is older than the stale age
#            (180 s in the article), try 5 times 1 s apart, rmdir to unlock;
#   dirlock  the dirlock library through its Perl module (Dirlock).
# It speaks the C board's protocol where tests/lost-update needs it (the
# form's CSRF token, POST post answered 303, GET api/messages with since,
# before and limit); docs/bindings.md describes it, and tools/deploy runs
# it under fcgiwrap (conf/boards.list: program=perl).
#
# Configuration: the file named by BOARD_CONF, "key = value" lines, keys
# title, base_path, data_dir (required), lock_mode, lock_space,
# lock_timeout, stale_age, delay_ms, max_messages, error_log.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256_hex);
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use File::Path qw(make_path);
use POSIX qw(strftime);
use Time::HiRes ();

my %conf = (
        title        => 'dirlock board (Perl)',
        base_path    => '/',
        data_dir     => undef,
        lock_mode    => 'dirlock',
        lock_space   => undef,
        lock_timeout => 10,
        stale_age    => 180,
        delay_ms     => 0,
        max_messages => 1000,
        error_log    => undef,
);
my %modes = map { $_ => 1 } qw(none seed dirlock);

# The longest each field may be, in characters (the limit a person sees,
# whatever script they write in): the form's maxlength, the checks of a
# post and the largest request a post may be all come from here.
my %max_chars = (name => 64, subject => 128, body => 8000);
# That request: every character 4 bytes of UTF-8, each byte "%XX", plus
# the names, '=', '&' and the token (64 hex digits).
my $max_request = length('token=') + 64;
$max_request += length($_) + 2 + 12 * $max_chars{$_} for keys %max_chars;

sub read_conf {
        my $file = $ENV{BOARD_CONF} or die "BOARD_CONF is not set\n";
        open my $fh, '<', $file or die "$file: $!\n";
        while (my $line = <$fh>) {
                next if $line =~ /^\s*(#|$)/;
                my ($k, $v) = $line =~ /^\s*(\w+)\s*=\s*(.*?)\s*$/ or die "$file:$.: not key = value\n";
                die "$file:$.: unknown key '$k'\n" unless exists $conf{$k};
                $conf{$k} = $v;
        }
        die "$file: data_dir is required\n" unless defined $conf{data_dir};
        die "$file: lock_mode '$conf{lock_mode}' is not none, seed or dirlock\n" unless $modes{ $conf{lock_mode} };
        for my $k (qw(lock_timeout stale_age delay_ms max_messages)) {
                die "$file: $k '$conf{$k}' is not a number\n" unless $conf{$k} =~ /^\d+(\.\d+)?$/;
        }
        $conf{lock_space} //= "$conf{data_dir}/locks";
}

# ---- answers ---------------------------------------------------------------

sub html { my ($s) = @_; $s =~ s/&/&amp;/g; $s =~ s/</&lt;/g; $s =~ s/>/&gt;/g; $s =~ s/"/&quot;/g; return $s }

sub answer {
        my ($status, $type, $body, @headers) = @_;
        binmode STDOUT;
        print "Status: $status\r\n", map("$_\r\n", @headers), "Content-Type: $type\r\n\r\n";
        print $body if ($ENV{REQUEST_METHOD} || 'GET') ne 'HEAD';
        exit 0;
}

sub page {
        my ($status, $title, $content, @headers) = @_;
        my $t = html($conf{title});
        answer($status, 'text/html; charset=utf-8', <<"EOF", @headers);
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>$t</title>
<link rel="stylesheet" href="/static/style.css"><link rel="icon" href="/favicon.ico"></head>
<body><header class="site"><h1><a href="$conf{base_path}">$t</a></h1>
<p class="mode">lock_mode = $conf{lock_mode}</p></header>
<main><h2>$title</h2>
$content
</main></body></html>
EOF
}

# One line per error answer, as the C board writes them: time, board,
# status, method, URI, process, cause; the page shows $visible (HTML),
# else the cause, escaped.
sub fail {
        my ($status, $cause, $visible, @headers) = @_;
        if (defined $conf{error_log} && open my $log, '>>', $conf{error_log}) {
                my ($s, $us) = Time::HiRes::gettimeofday();
                my $line = sprintf "%s.%03dZ %s %s %s %s [pid %d]: %s\n", strftime('%Y-%m-%dT%H:%M:%S', gmtime $s),
                    $us / 1000, $conf{base_path}, $status =~ /^(\d+)/, $ENV{REQUEST_METHOD} || '-',
                    $ENV{REQUEST_URI} || '-', $$, $cause;
                $line =~ s/[\x00-\x09\x0b-\x1f]/?/g;
                print {$log} $line;
                close $log;
        }
        page($status, $visible // html($cause), '<p><a href="' . $conf{base_path} . '">back</a></p>', @headers);
}

# The seed's "busy, please wait" (只今混雑しています。しばらくお待ちください。).
sub busy {
        my ($cause) = @_;
        fail('503 Service Unavailable', "busy, please try again ($cause)",
                '<span lang="ja">只今混雑しています。しばらくお待ちください。</span> Busy, please wait a moment and try again.',
                'Retry-After: 1');
}

# ---- the message log: "no TAB time TAB name TAB subject TAB body" ---------

sub esc   { my ($s) = @_; $s =~ s/\\/\\\\/g; $s =~ s/\t/\\t/g; $s =~ s/\n/\\n/g; return $s }
sub unesc { my ($s) = @_; $s =~ s/\\(.)/$1 eq 't' ? "\t" : $1 eq 'n' ? "\n" : $1/ge; return $s }

sub read_log {
        my $file = "$conf{data_dir}/messages.log";
        open my $fh, '<', $file or return ();
        my @msgs;
        while (my $line = <$fh>) {
                chomp $line;
                my ($no, $time, $name, $subject, $body) = split /\t/, $line, 5;
                next unless defined $body;
                push @msgs, { no => $no + 0, time => $time, name => unesc($name), subject => unesc($subject),
                        body => unesc($body) };
        }
        return @msgs;
}

sub write_log {
        my @msgs = @_;
        my $file = "$conf{data_dir}/messages.log";
        my $tmp  = "$file.tmp$$";
        open my $fh, '>', $tmp or die "cannot write data_dir/messages.log: $!\n";
        print {$fh} join("\t", $_->{no}, $_->{time}, esc($_->{name}), esc($_->{subject}), esc($_->{body})), "\n"
            for @msgs;
        close $fh or die "cannot write data_dir/messages.log: $!\n";
        rename $tmp, $file or die "cannot replace data_dir/messages.log: $!\n";
}

# ---- the article's lock, as written (lock_mode seed) -----------------------

sub lock {
        my $dir = $_[0];
        # 古いロック(3分以前)は削除 -- older than the stale age: removed
        if (-e $dir) {
                my $t = (stat($dir))[9];
                if ($t < time - $conf{stale_age}) { &unlock($dir); }
        }
        # ロックできなかったら5回まで1秒間待ってみる -- 5 tries, 1 s apart
        my $retry = 5;
        while (!mkdir($dir, 0755)) {
                if (--$retry <= 0) { return 0; }
                sleep(1);
        }
        return 1;
}

sub unlock {
        rmdir("$_[0]");
}

# ---- posting: read the log, add the message, write the log -----------------

# The read-modify-write, with the demonstration delay in its window;
# $still_ours (if any) runs just before the write.
sub add_message {
        my ($msg, $still_ours) = @_;
        my @msgs = read_log();
        Time::HiRes::sleep($conf{delay_ms} / 1000) if $conf{delay_ms} > 0;
        $msg->{no} = @msgs ? $msgs[-1]{no} + 1 : 1;
        push @msgs, $msg;
        splice @msgs, 0, @msgs - $conf{max_messages} if @msgs > $conf{max_messages};
        $still_ours->() if $still_ours;
        write_log(@msgs);
}

sub post {
        my ($msg) = @_;
        my $mode = $conf{lock_mode};
        if ($mode eq 'none') {
                add_message($msg);
        } elsif ($mode eq 'seed') {
                make_path($conf{lock_space});
                my $lockdir = "$conf{lock_space}/lockdir";
                &lock($lockdir) or busy('the lock directory stayed in place through 5 tries');
                eval { add_message($msg); 1 } or do { my $e = $@; &unlock($lockdir); die $e };
                &unlock($lockdir);
        } else {
                require Dirlock;
                my $lock = eval {
                        Dirlock->acquire($conf{lock_space}, 'messages', timeout => $conf{lock_timeout},
                                stale_age => $conf{stale_age});
                };
                if (!$lock) {
                        die $@ unless ref $@ && $@->isa('Dirlock::Error');
                        busy($@->message) if $@->code eq 'ETIMEDOUT' || $@->code eq 'EBUSY';
                        fail('500 Internal Server Error', 'lock: ' . $@->message);
                }
                # A lock broken while we held it: another post may be under
                # way; writing now would lose it.
                add_message($msg, sub { eval { $lock->check; 1 } or busy($@->message) });
                $lock->release;
        }
}

# ---- requests --------------------------------------------------------------

sub form_fields {
        my ($len) = ($ENV{CONTENT_LENGTH} // '') =~ /^(\d+)$/;
        fail('413 Content Too Large', "request body larger than $max_request bytes") if ($len // 0) > $max_request;
        my $data = '';
        read(STDIN, $data, $len) if $len;
        my %f;
        for my $pair (split /&/, $data) {
                my ($k, $v) = map { my $s = $_ // ''; $s =~ tr/+/ /; $s =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge; $s }
                    split /=/, $pair, 2;
                $f{$k} = $v;
        }
        return \%f;
}

sub cookie_sid {
        my ($sid) = ($ENV{HTTP_COOKIE} // '') =~ /(?:^|;\s*)sid=([0-9a-f]{32})(?:;|$)/;
        return $sid;
}

sub secret {
        my $file = "$conf{data_dir}/secret";
        if (sysopen my $fh, $file, O_WRONLY | O_CREAT | O_EXCL, 0600) {
                open my $rand, '<:raw', '/dev/urandom' or die "/dev/urandom: $!\n";
                read $rand, my $bytes, 32;
                print {$fh} unpack('H*', $bytes), "\n";
                close $fh or die "cannot write data_dir/secret: $!\n";
        }
        for (1 .. 100) { # a concurrent first request may be writing it
                open my $fh, '<', $file or die "cannot read data_dir/secret: $!\n";
                my $s = <$fh>;
                return $s if defined $s && $s =~ s/\n\z//;
                Time::HiRes::sleep(0.01);
        }
        die "data_dir/secret is empty\n";
}

sub token { my ($sid) = @_; return hmac_sha256_hex($sid, secret()) }

sub show_list {
        my $sid = cookie_sid();
        my @set;
        if (!$sid) {
                open my $rand, '<:raw', '/dev/urandom' or die "/dev/urandom: $!\n";
                read $rand, my $bytes, 16;
                $sid = unpack 'H*', $bytes;
                @set = ("Set-Cookie: sid=$sid; Path=$conf{base_path}; HttpOnly; SameSite=Lax");
        }
        my @msgs = reverse read_log();
        splice @msgs, 50 if @msgs > 50;
        my $list = join '', map {
                sprintf "<article><h3>%d. %s</h3><p class=\"meta\">%s, %s</p><pre>%s</pre></article>\n", $_->{no},
                    html($_->{subject} eq '' ? '(no subject)' : $_->{subject}), html($_->{name}), html($_->{time}),
                    html($_->{body});
        } @msgs;
        my $tok = token($sid);
        page('200 OK', 'Messages', <<"EOF" . ($list || "<p>No messages yet.</p>\n"), @set);
<form method="post" action="$conf{base_path}post">
<input type="hidden" name="token" value="$tok">
<p class="field"><label for="name">Name</label> <input id="name" name="name" maxlength="$max_chars{name}"></p>
<p class="field"><label for="subject">Subject</label> <input id="subject" name="subject" maxlength="$max_chars{subject}"></p>
<p class="field"><label for="body">Message</label>
<textarea id="body" name="body" rows="4" maxlength="$max_chars{body}" required></textarea></p>
<p><button>Post</button></p>
</form>
EOF
}

sub do_post {
        my $f   = form_fields();
        my $sid = cookie_sid();
        fail('403 Forbidden', 'missing or wrong CSRF token') unless $sid && ($f->{token} // '') eq token($sid);
        my %msg;
        for my $k (qw(name subject body)) {
                my $v = $f->{$k} // '';
                utf8::decode($v) or fail('400 Bad Request', "$k is not valid UTF-8");
                $v =~ s/\r\n?/\n/g;
                fail('400 Bad Request', "$k has control characters") if $v =~ /[\x00-\x08\x0b-\x1f\x7f]/;
                $msg{$k} = $v;
        }
        fail('400 Bad Request', 'the message is empty') if $msg{body} !~ /\S/;
        for my $k (sort keys %max_chars) {
                fail('400 Bad Request', "$k is too long: " . length($msg{$k}) . " characters, at most $max_chars{$k}")
                    if length $msg{$k} > $max_chars{$k};
        }
        $msg{name} = 'anonymous' if $msg{name} eq '';
        $msg{time} = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime);
        utf8::encode($msg{$_}) for qw(name subject body);
        eval { post(\%msg); 1 } or fail('500 Internal Server Error', "storage: $@");
        answer('303 See Other', 'text/plain', "stored\n", "Location: $conf{base_path}");
}

sub api_messages {
        require JSON::PP;
        my %q;
        for my $pair (split /&/, $ENV{QUERY_STRING} // '') {
                my ($k, $v) = split /=/, $pair, 2;
                fail('400 Bad Request', "parameter $k given twice") if exists $q{$k};
                $q{$k} = $v // '';
        }
        for my $k (keys %q) {
                fail('400 Bad Request', "unknown parameter $k") unless $k =~ /^(since|before|limit)$/;
                fail('400 Bad Request', "$k must be a whole number") unless $q{$k} =~ /^\d+$/;
        }
        my $limit = $q{limit} // 100;
        $limit = 1000 if $limit > 1000;
        fail('400 Bad Request', 'limit must be at least 1') if $limit < 1;
        my @msgs = grep { (!defined $q{since} || $_->{no} > $q{since}) && (!defined $q{before} || $_->{no} < $q{before}) }
            read_log();
        # since: the oldest `limit`; otherwise the newest; oldest first.
        @msgs = defined $q{since} ? @msgs[ 0 .. ($#msgs < $limit - 1 ? $#msgs : $limit - 1) ]
            : @msgs[ ($#msgs - $limit + 1 < 0 ? 0 : $#msgs - $limit + 1) .. $#msgs ];
        my $json = JSON::PP->new->canonical;
        for my $m (@msgs) { utf8::decode($m->{$_}) for qw(name subject body) }
        answer('200 OK', 'application/json', $json->utf8->encode({ messages => \@msgs }) . "\n");
}

eval { read_conf(); 1 } or do {
        print STDERR "board.pl: $@";
        fail('500 Internal Server Error', "configuration: $@");
};
my $uri = $ENV{DOCUMENT_URI} // (($ENV{SCRIPT_NAME} // '') . ($ENV{PATH_INFO} // ''));
my $path = index($uri, $conf{base_path}) == 0 ? substr($uri, length $conf{base_path}) : undef;
my $method = $ENV{REQUEST_METHOD} // 'GET';
$method = 'GET' if $method eq 'HEAD';
if (!defined $path) {
        fail('404 Not Found', 'not found');
} elsif ($path eq '') {
        $method eq 'GET' ? show_list() : fail('405 Method Not Allowed', 'use GET', undef, 'Allow: GET, HEAD');
} elsif ($path eq 'post') {
        $method eq 'POST' ? do_post() : fail('405 Method Not Allowed', 'use POST', undef, 'Allow: POST');
} elsif ($path eq 'api/messages') {
        $method eq 'GET' ? api_messages() : fail('405 Method Not Allowed', 'use GET', undef, 'Allow: GET, HEAD');
} elsif ($path eq 'api/info') {
        answer('200 OK', 'application/json', qq({"mode":"$conf{lock_mode}","program":"perl"}\n));
} else {
        fail('404 Not Found', 'not found');
}
