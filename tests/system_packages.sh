#!/usr/bin/env bash
# Debian packages the test suite needs beyond Python: Chromium for the browser tests of creator_web (Playwright
# for Python drives Debian's /usr/bin/chromium; Playwright's own browser download is not reachable), a colour
# emoji font so Wordle's squares render in screenshots, and a CJK font so Chinese, Japanese and Korean text is drawn
# rather than boxes (fonts-wqy-microhei: 1.6 MB download, 5 MB installed, Apache-2.0 or GPLv3 with the font
# exception; fonts-noto-cjk would be 57 MB / 91 MB; the pages name both in their font stack). Installed with apt-get
# only when missing; as root, or through sudo when there is one. If the install is impossible, it says why and the
# browser tests skip with that reason (they check for /usr/bin/chromium); the rest of the suite runs either way.
set -uo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || missing+=(fonts-noto-color-emoji)
dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || missing+=(fonts-wqy-microhei)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
  echo "system_packages.sh: cannot install ${missing[*]} (not root, no sudo): the browser tests will skip" >&2
  exit 0
fi
echo "system_packages.sh: apt-get install ${missing[*]}"
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null; then
  echo "system_packages.sh: apt-get install ${missing[*]} failed: the browser tests will skip" >&2
fi
exit 0
