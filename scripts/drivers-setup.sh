#!/usr/bin/env bash
# The driver kits and the bundled lock drivers of a checkout, built into .cache/drivers/ (or
# LOCKCHAOS_DRIVERS_DIR) by the steps `lockchaos setup --drivers` runs for an installed package,
# written down once: chaos/drivers/build.sh, which builds them from the sources shipped with the
# package (chaos/drivers/kits/, chaos/drivers/sources/). A second run with everything present takes well under a second.
#
# A driver that cannot be built (a missing JDK, Go or Node, a failed build) is one line and
# the rest of setup goes on (its tests skip, naming it); under CI (CI set) that is an error
# instead: exit status 1 (scripts/unavailable.sh).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# shellcheck source=unavailable.sh
source "$ROOT/scripts/unavailable.sh"
bash "$ROOT/chaos/drivers/build.sh" "${LOCKCHAOS_DRIVERS_DIR:-$ROOT/.cache/drivers}" \
    || unavailable drivers "some drivers could not be set up (see above)" "their tests will skip"
