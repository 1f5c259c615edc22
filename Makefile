# parley: build, run, test, lint, fuzz, bench.
GO ?= go
STATICCHECK_VERSION := v0.8.2
PKGS := ./...
FUZZTIME ?= 20s
# VERSION is stamped into the binary (parley version): git describe of this
# tree, "-dirty" when it has changes. Without git it is empty, and parley
# version names what the go command recorded instead.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := -X github.com/parley-chat/parley/cli.version=$(VERSION)

.PHONY: all build run test lint failpoints fuzz bench files-bench golden soak adversary cluster connload abuse clean

all: build

# build says what it does first: a first build compiles every dependency,
# which takes minutes with nothing else on the screen.
build:
	@echo "building bin/parley $(VERSION) (a first build compiles every dependency and can take a few minutes; later ones take seconds)"
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/parley .

run: build
	@echo "starting parley demo (ctrl+c quits)"
	./bin/parley demo

# test runs the suite in two steps. First, with the race detector, every
# package but the end-to-end tests, without the tests that drive one
# goroutine through long walks or kill child processes (NORACE: the
# failpoint matrix, the crash windows, the property test, the long
# deterministic walks, the store's plan tables) and without the adversary
# simulations: there the detector finds nothing (nothing runs
# concurrently) and multiplies the time by five to ten; the engine's tests
# that drive devices from one goroutine skip themselves there too
# (oneGoroutine in engine/onegoroutine_test.go). Second, side by side and
# without the detector: every engine test but the adversaries (the
# NORACE ones and those oneGoroutine skipped among them) and the store's
# NORACE tests; the end-to-end tests,
# whose own code is a harness that waits on bin/parley child processes
# (built without the detector in any case) and leaves the cores to the
# others most of the time (the tests that wait most run three at a time,
# -parallel 3); and the adversary simulations (one-to-one with
# 150 cases, ADVERSARY_CASES_CI, make adversary runs 3000; groups with
# ADVERSARY_GROUP_CASES cases, 30 here; people of several devices with
# ADVERSARY_PEOPLE_CASES cases, 30 here; those people in groups with
# ADVERSARY_PEOPLE_GROUP_CASES cases, 20 here), which print their summary
# lines. The output of the end-to-end tests and the adversaries follows
# the NORACE tests'. The failpoint matrix's scenarios run four at a time
# (-parallel 4): a scenario waits on fsync and child processes a good part
# of the time. The matrix stops at a fifth of its points here (the
# statement points inside a transaction are thinned; make failpoints runs
# them all). The steps without the detector build as the end-to-end tests
# build bin/parley (CGO_ENABLED=0), so that they share its compiled
# packages.
NORACE := TestFailpointMatrix|TestCrashWindows|TestGroupCrashWindows|TestReliabilityProperties|TestStaleReplayCannotBreakTheSession|TestRequestBound|TestCollisionWalkthrough|TestRosterLogCompacts|TestApplyRefused|TestFailpointErrors|TestApplyPlans|TestApplyKinds
# The table and walk tests below call the engine from one goroutine, as
# the ones above do; under the detector they took 5 to 15 seconds each
# (about 110 seconds of the race step's engine run, its longest package).
NORACE := $(NORACE)|TestActionOrdering|TestGroupActionOrdering|TestCollisionStaleRetry|TestStrangerCannotFillAProfile|TestHostileFramesLeaveStaging|TestCollisionWinnerResetBeforeTheLoserHeard|TestDelayedInitiationCannotBreakAConvergedSession|TestCollisionWinnerWithNothingPending|TestFileTransferSurvivesSIGKILL|TestMigrateFromEveryVersion|TestKeptDecisionsAreBounded
# The tests of groups across a person's devices, group decisions and the
# groups a link carries drive in-memory worlds (enginetest.Network) from one
# goroutine too: 21 tests, about 75 seconds under the detector, 15 without.
NORACE := $(NORACE)|TestGroupReachesEveryDeviceOfAMember|TestLinkedDeviceSendsToGroup|TestGroupRefusesStrangerUnderMemberName|TestRevokedDeviceLanesEndRemoved|TestUnlistedDeviceHeldUntilListLearned|TestChainReachesEveryDevice|TestUnlistedDeviceAsksForTheList|TestSiblingsGroupIsNoRequest|TestUnlistedSiblingAsksForOwnList|TestNoListHeldAsksForIt|TestMemberCannotStartALinkedDevicesGroup|TestRevokedEntryLosesItsAuthority
NORACE := $(NORACE)|TestGroupDecisionsAreThePersons|TestGroupDecisionBeforeTheMessage|TestGroupDecisionTakesBackADiscard|TestCatchUpTellsASiblingOfAGroupCommit|TestGroupArrivalCommitTellsTheSiblings|TestLinkedDeviceHoldsTheGroups|TestLinkNoneWithoutABlobStore|TestLinkLeavesAnOpenRequest|TestLinkNoneGoesWithoutAnArchiveOverTheBound
# Sibling actions and engine-made discards (in-memory worlds, one
# goroutine): 4 tests, about 9 seconds under the detector, 1 without.
NORACE := $(NORACE)|TestCatchUpTellsNoEngineDiscard|TestRefusedCommitTellsTheChoice|TestSiblingsMessageIsItsAuthorsToEdit|TestSiblingsGroupActionIsCommittedOnArrival
ADVERSARIES := TestAdversary|TestAdversaryGroups|TestAdversaryPeople|TestAdversaryPeopleGroups
E2E_LOG := .e2e-test.log
ADV_LOG := .adversary-test.log
ADV1_LOG := .adversary-one-test.log
test:
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m -skip '^($(NORACE)|$(ADVERSARIES))$$' $$($(GO) list $(PKGS) | grep -v '/e2e$$')
	@echo "running the NORACE tests, and beside them the end-to-end tests and the adversaries (their output follows)"; \
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 20m -parallel 3 ./e2e > $(E2E_LOG) 2>&1 & e2e_pid=$$!; \
	CGO_ENABLED=0 ADVERSARY_GROUP_CASES=$${ADVERSARY_GROUP_CASES:-30} ADVERSARY_PEOPLE_CASES=$${ADVERSARY_PEOPLE_CASES:-30} ADVERSARY_PEOPLE_GROUP_CASES=$${ADVERSARY_PEOPLE_GROUP_CASES:-20} $(GO) test -count=1 -timeout 20m -run '^(TestAdversaryGroups|TestAdversaryPeople|TestAdversaryPeopleGroups)$$' -v ./engine > $(ADV_LOG) 2>&1 & adv_pid=$$!; \
	CGO_ENABLED=0 ADVERSARY_CASES=$${ADVERSARY_CASES_CI:-150} $(GO) test -count=1 -timeout 20m -run '^TestAdversary$$' -v ./engine > $(ADV1_LOG) 2>&1 & one_pid=$$!; \
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 20m -parallel 4 -skip '^($(ADVERSARIES))$$' ./engine && CGO_ENABLED=0 $(GO) test -count=1 -timeout 20m -run '^($(NORACE))$$' ./store; norace=$$?; \
	wait $$e2e_pid; e2e=$$?; wait $$one_pid; one=$$?; wait $$adv_pid; more=$$?; \
	echo "== the end-to-end tests (./e2e), run beside the NORACE tests:"; cat $(E2E_LOG); rm -f $(E2E_LOG); \
	echo "== the one-to-one adversary, run beside the NORACE tests:"; cat $(ADV1_LOG); rm -f $(ADV1_LOG); \
	echo "== the group, people and people-in-groups adversaries, run beside the NORACE tests:"; cat $(ADV_LOG); rm -f $(ADV_LOG); \
	test $$norace -eq 0 && test $$e2e -eq 0 && test $$one -eq 0 && test $$more -eq 0

# failpoints runs the failpoint matrix at every point: make test stops
# only at the first and the last statement point of each transaction (and
# at every point between transactions), which is about a fifth of the
# stops; this runs all of them (about 25 minutes on two cores).
failpoints:
	CGO_ENABLED=0 PARLEY_FAILPOINTS=all $(GO) test -count=1 -timeout 0 -parallel 4 -run '^TestFailpointMatrix$$' -v ./engine

# adversary runs the adversary simulation with ADVERSARY_CASES cases
# (default 3000); a failure prints the seed that replays it.
ADVERSARY_CASES ?= 3000
adversary:
	ADVERSARY_CASES=$(ADVERSARY_CASES) $(GO) test -count=1 -timeout 0 -run '^TestAdversary$$' -v ./engine

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet $(PKGS)
	CGO_ENABLED=0 $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (FUZZTIME=5m make fuzz for a long run).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s $$pkg || exit 1; \
		done; \
	done

bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	./bin/parley bench

# files-bench measures file transfers (docs/performance.md, "Files"): a
# 100 MiB file with the relay's rate limits off and with its defaults, then
# a 1 GiB file (the blob quotas raised to fit) for the memory growth. Each
# makes its file in a temporary directory and removes it; the 1 GiB run
# needs about 3 GiB of free disk there. Never part of make test.
files-bench: build
	./bin/parley bench --file 100MiB
	./bin/parley bench --file 100MiB --default-limits
	./bin/parley bench --file 1GiB

# golden refreshes the TUI's golden screens.
golden:
	$(GO) test ./tui/demo -run TestGolden -update

# soak runs the soak test with SOAK_MESSAGES messages (default 5000).
SOAK_MESSAGES ?= 5000
soak:
	SOAK_MESSAGES=$(SOAK_MESSAGES) $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./e2e

# cluster runs a local 3-node NATS JetStream cluster and two relays on it
# (ports 4222-4224 and 7001-7002) until ctrl+c.
cluster: build
	$(GO) run ./tools/cluster

# connload measures the relay's memory per idle authenticated connection
# with CONNS connections (default 10000) from a process of their own.
CONNS ?= 10000
connload: build
	$(GO) run ./tools/connload -n $(CONNS) -parley bin/parley

# abuse runs the relay's abuse tests at full size (the default limits: a
# relay holding 1 GiB filled by four IPs, 19,990 connections from one IP)
# instead of CI's scaled limits. It needs a gigabyte of memory and an open
# file limit above 20,000 (ulimit -n).
abuse:
	PARLEY_ABUSE_FULL=1 $(GO) test -count=1 -timeout 30m -v -run '^(TestStrangersLeaveRoomForReaders|TestPlainConnectionsCounted|TestSenderBlockFlood)$$' ./transport/relayserver

clean:
	rm -rf bin
