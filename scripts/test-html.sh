#!/usr/bin/env bash
# test-html.sh: render the report.html pages of the test fixtures in headless
# Chromium and check the rendered page, not only the HTML text.
#
#   bash scripts/test-html.sh
#
# Installs Debian's chromium (and fonts-liberation) when missing (needs root
# or sudo; about 40 s with apt-get update). Writes, from fixtures and without
# measuring anything (reports' TestHTMLFixture with BENCH_HTML_OUT), the page
# of the all-sections fixture profile (results/testdata) beside its
# profile.md and the page of the synthetic sweep cells (reports' sweep tests)
# beside its report.md; then, for each, Chromium's DOM after parsing and
# layout (--dump-dom) must have the title, one <svg> per figure of the
# Markdown with a non-zero viewBox and drawn content, the Markdown's tables
# with the same row counts, its headings, and no script, stylesheet link,
# image or frame and no attribute naming an http(s) URL; and a screenshot
# (--screenshot) must not be blank (decoded with python3: at least 2 % of
# pixels not white, at least 8 colours).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

browser=""
for c in chromium chromium-browser; do
	if command -v "$c" >/dev/null; then
		browser=$c
		break
	fi
done
if [ -z "$browser" ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test-html.sh: installing chromium" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
	browser=chromium
	echo "test-html.sh: chromium installed in $(($(date +%s) - start)) s" >&2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
BENCH_HTML_OUT="$tmp" go test ./reports -run '^TestHTMLFixture$' -count=1 >/dev/null

chrome() {
	timeout 180 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$tmp/chromium-profile" --hide-scrollbars "$@" 2>>"$tmp/chromium.log"
}

for kind in profile sweep; do
	dir="$tmp/$kind"
	md=report.md
	title="bench sweep report"
	if [ "$kind" = profile ]; then
		md=profile.md
		title="bench profile: vm"
	fi
	url="file://$dir/report.html"
	if ! chrome --dump-dom "$url" >"$dir/dom.html" ||
		! chrome --window-size=1024,1400 --screenshot="$dir/shot.png" "$url" >/dev/null; then
		echo "test-html.sh: $browser failed on $url:" >&2
		tail -20 "$tmp/chromium.log" >&2
		exit 1
	fi
	python3 - "$dir/dom.html" "$dir/$md" "$dir/shot.png" "$title" <<'EOF'
import html.parser, struct, sys, zlib

dom_file, md_file, png_file, want_title = sys.argv[1:5]
fail = []

# What the Markdown holds: figures, tables (rows without header and
# separator), headings.
figs = tables = 0
rows = []
heads = []
in_table = False
for l in open(md_file, encoding="utf-8").read().split("\n"):
    if l.startswith("!["):
        figs += 1
    if l.startswith("#"):
        heads.append(l.lstrip("#").strip())
    if l.startswith("|"):
        if not in_table:
            tables += 1
            rows.append(-2)
        rows[-1] += 1
        in_table = True
    else:
        in_table = False


class DOM(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.title = ""
        self.svgs = []          # [viewBox, number of drawn elements]
        self.tables = []        # body rows per table
        self.heads = []
        self.bad = []
        self.text = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.bad.append("<%s>" % tag)
        for k, v in attrs:
            if v and ("http://" in v or "https://" in v) and k in ("src", "href", "xlink:href", "style", "xmlns"):
                self.bad.append('%s="%s"' % (k, v[:60]))
        if tag == "svg":
            self.svgs.append([a.get("viewbox", ""), 0])
        elif "svg" in self.stack and tag in ("path", "text", "line", "polyline", "polygon", "rect", "circle"):
            self.svgs[-1][1] += 1
        if tag == "table":
            self.tables.append(0)
        if tag == "tr" and "tbody" in self.stack:
            self.tables[-1] += 1
        if tag in ("title", "h1", "h2", "h3", "h4"):
            self.text = ""
        if tag not in ("meta", "br", "hr", "img", "input", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in ("title", "h1", "h2", "h3", "h4") and self.text is not None:
            if tag == "title":
                self.title = self.text
            else:
                self.heads.append(self.text.strip())
            self.text = None
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, d):
        if self.text is not None:
            self.text += d


dom = DOM()
dom.feed(open(dom_file, encoding="utf-8").read())
if dom.title != want_title:
    fail.append("title %r, want %r" % (dom.title, want_title))
if len(dom.svgs) != figs:
    fail.append("%d <svg> elements, want %d (the Markdown's figures)" % (len(dom.svgs), figs))
for i, (vb, n) in enumerate(dom.svgs):
    v = vb.split()
    if len(v) != 4 or float(v[2]) <= 0 or float(v[3]) <= 0 or n < 10:
        fail.append("svg %d: viewBox %r, %d drawn elements" % (i + 1, vb, n))
if dom.tables != rows:
    fail.append("table body rows %s, want %s" % (dom.tables, rows))
if dom.heads[: len(heads)] != heads:
    fail.append("headings %s, want %s" % (dom.heads, heads))
if dom.bad:
    fail.append("not self-contained: %s" % ", ".join(sorted(set(dom.bad))))

# The screenshot: decode the PNG (8-bit RGB or RGBA, non-interlaced, as
# Chromium writes it) and count non-white pixels and colours.
data = open(png_file, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    fail.append("screenshot is not a PNG")
else:
    pos, idat = 8, b""
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = {2: 3, 6: 4}.get(ctype)
    if depth != 8 or bpp is None or interlace:
        fail.append("screenshot PNG depth %d colour type %d interlace %d not decoded" % (depth, ctype, interlace))
    else:
        raw = zlib.decompress(idat)
        stride = w * bpp
        prev = bytearray(stride)
        colours, ink = set(), 0
        for y in range(h):
            f = raw[y * (stride + 1)]
            line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    line[x] = (line[x] + a) & 255
                elif f == 2:
                    line[x] = (line[x] + b) & 255
                elif f == 3:
                    line[x] = (line[x] + (a + b) // 2) & 255
                elif f == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            prev = line
            if y % 4 == 0:
                for x in range(0, stride, bpp * 4):
                    px = bytes(line[x:x + 3])
                    colours.add(px)
                    if px != b"\xff\xff\xff":
                        ink += 1
        sampled = ((h + 3) // 4) * ((w + 3) // 4)
        if ink < 0.02 * sampled or len(colours) < 8:
            fail.append("screenshot %dx%d looks blank: %.1f%% of sampled pixels not white, %d colours" % (w, h, 100.0 * ink / sampled, len(colours)))
        else:
            print("  screenshot %dx%d: %.1f%% of sampled pixels not white, %d colours" % (w, h, 100.0 * ink / sampled, len(colours)))

if fail:
    print("test-html.sh: %s:" % dom_file, file=sys.stderr)
    for f in fail:
        print("  " + f, file=sys.stderr)
    sys.exit(1)
print("  %r: %d svg (viewBox %s ...), %d tables with %d body rows, %d headings" % (dom.title, len(dom.svgs), dom.svgs[0][0], len(dom.tables), sum(dom.tables), len(dom.heads)))
EOF
	echo "test-html.sh: $kind report.html ok"
done
echo "test-html.sh: ok in $(($(date +%s) - start)) s"
