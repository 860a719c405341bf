package probes

import "github.com/ftctl/ftctl/internal/kstr"

// isGoodName is kernel/trace/trace.h is_good_name(): a C identifier (kernel ctype).
func isGoodName(name string) bool { return goodName(name, false) }

// isGoodSystemName is is_good_system_name(): a group name may also hold '-', anywhere
// (__is_good_name(name, true); a fix of 5b7a96220900e "tracing/probe: Check event/group
// naming rule at parsing" sent to stable), never '.' (seen: "p:foo.1/bar vfs_read" refused by
// 6.1 and 6.12 with BAD_GROUP_NAME, as the selftests expect).
func isGoodSystemName(name string) bool { return goodName(name, true) }

func goodName(name string, hyphen bool) bool {
	if name == "" || (!kstr.IsAlpha(name[0]) && name[0] != '_' && (!hyphen || name[0] != '-')) {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !kstr.IsAlpha(c) && !kstr.IsDigit(c) && c != '_' && (!hyphen || c != '-') {
			return false
		}
	}
	return true
}
