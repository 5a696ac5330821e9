# Helpers for shell tests that run inside the VM (source it from the guest
# command of run.sh). Each step appends "PASS name" or "FAIL name" to
# $VM_RESULTS, which run.sh counts into its "vm: N passed, M failed" line.
#
#   . tests/vm/lib.sh
#   vm_step "rbd module loads" modprobe rbd
#   vm_wait 10 test -b /dev/rbd0          # poll up to 10 s, no bare sleeps
#   vm_finish                             # exit status: 0 when no step failed

VM_RESULTS=${VM_RESULTS:-/dev/null}
vm_passed=0
vm_failed=0

# vm_step NAME CMD [ARG...]: runs CMD, records its result under NAME.
vm_step() {
        local name=$1
        shift
        echo "---- $name"
        if "$@"; then
                echo "PASS $name" | tee -a "$VM_RESULTS"
                vm_passed=$((vm_passed + 1))
        else
                echo "FAIL $name" | tee -a "$VM_RESULTS"
                vm_failed=$((vm_failed + 1))
        fi
}

# vm_wait SECONDS CMD [ARG...]: polls CMD every 0.1 s until it succeeds;
# returns 1 when SECONDS pass first.
vm_wait() {
        local end=$(($(date +%s) + $1))
        shift
        until "$@"; do
                [ "$(date +%s)" -lt "$end" ] || return 1
                sleep 0.1
        done
}

vm_finish() {
        echo "steps: $vm_passed passed, $vm_failed failed"
        [ "$vm_failed" -eq 0 ]
}
