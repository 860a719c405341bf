package probes

import (
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	p := btfParser(t)
	funcs := func(prefix string) []string {
		var out []string
		for _, f := range []string{"vfs_read", "vfs_write", "getname"} {
			if strings.HasPrefix(f, prefix) {
				out = append(out, f)
			}
		}
		return out
	}
	for _, c := range []struct{ line, want string }{
		{"", ""},
		{"p:myopen vfs_", "vfs_read,vfs_write"},
		{"p:myopen ", "vfs_read,vfs_write,getname"}, // as funcs gives them
		{"p:x vfs_read ", "$arg*,$arg1,$arg2,$arg3,$arg4,$comm,$stack,buf,count,file,pos"},
		{"p:x vfs_read c", "count"},
		{"p:x vfs_read count p", "pos"},
		{"p:x vfs_read n=co", "n=count"},
		{"p:x vfs_read file->f_", "file->f_flags,file->f_inode,file->f_path,file->f_pos"},
		{"p:x vfs_read file->f_path.", "file->f_path.dentry"},
		{"p:x vfs_read name=file->f_path.dentry->d_name.", "name=file->f_path.dentry->d_name.hash,name=file->f_path.dentry->d_name.hash_len,name=file->f_path.dentry->d_name.len,name=file->f_path.dentry->d_name.name"},
		{"p:x vfs_read file->f_inode->", "file->f_inode->i_ino"},
		{"p:x vfs_read count->", ""},        // not a pointer
		{"p:x vfs_read nosuch->", ""},       // not a parameter
		{"p:x vfs_read file->f_flags.", ""}, // not a struct
		{"r:x getname $r", "$retval"},
		{"p:x getname%return $retval->", "$retval->name"},
		{"p:x vfs_read count:s", "count:s16,count:s32,count:s64,count:s8,count:string,count:symbol,count:symstr"},
		{"p:x vfs_read +0(%si):str", "+0(%si):string"},
		{"p:x vfs_read +0(%si", ""},
		{"p:x vfs_read+8 $a", ""}, // no $argN nor BTF past the entry
		{"p:x nosuchfunc $a", "$arg1,$arg2,$arg3,$arg4,$arg5,$arg6"},
		{"t:x sched_switch ", "$arg*,$arg1,$arg2,$arg3,$arg4,$comm,$stack,next,preempt,prev,prev_state"}, // complete_kinds_test.go
		{"-:x ", ""},
	} {
		got := strings.Join(p.Complete(c.line, funcs), ",")
		if got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.line, got, c.want)
		}
	}
}

// What this kernel's README does not announce is not offered: 6.1 has no BTF names, no
// members, no symstr.
func TestCompleteFollowsTheGrammar(t *testing.T) {
	p := btfParser(t)
	p.Features.BTFArgs, p.Features.BTFFields, p.Features.Symstr, p.Features.RetArgs = false, false, false, false
	for _, c := range []struct{ line, want string }{
		{"p:x vfs_read ", "$arg1,$arg2,$arg3,$arg4,$arg5,$arg6,$comm,$stack"},
		{"p:x vfs_read file->", ""},
		{"p:x vfs_read count:sy", "count:symbol"},
		{"r:x vfs_read $", "$comm,$retval,$stack"},
	} {
		if got := strings.Join(p.Complete(c.line, nil), ","); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.line, got, c.want)
		}
	}
}
