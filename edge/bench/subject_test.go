package main

import "testing"

func TestMosquittoConfigRender(t *testing.T) {
	tests := []struct {
		name string
		cfg  mosquittoConfig
		want string
	}{
		{
			name: "autosave default",
			cfg:  mosquittoConfig{Port: 18830, Dir: "/tmp/x", Cloud: "127.0.0.1:1884"},
			want: `listener 18830 127.0.0.1
allow_anonymous true
persistence true
persistence_location /tmp/x/
log_dest file /tmp/x/mosquitto.log
log_type error
log_type warning
log_type notice
log_type information
connection cloud
address 127.0.0.1:1884
clientid gw-bench-bridge
cleansession false
try_private false
bridge_protocol_version mqttv311
restart_timeout 1
topic dt/# out 1
`,
		},
		{
			name: "autosave on changes, as root",
			cfg:  mosquittoConfig{Port: 1, Dir: "/d", Cloud: "c:2", OnChange: true, AsRoot: true},
			want: `listener 1 127.0.0.1
allow_anonymous true
user root
persistence true
persistence_location /d/
autosave_on_changes true
autosave_interval 1
log_dest file /d/mosquitto.log
log_type error
log_type warning
log_type notice
log_type information
connection cloud
address c:2
clientid gw-bench-bridge
cleansession false
try_private false
bridge_protocol_version mqttv311
restart_timeout 1
topic dt/# out 1
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Render(); got != tt.want {
				t.Fatalf("Render() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
