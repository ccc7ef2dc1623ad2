package dap

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/device"
)

// TestVSCodeManifestMatchesLaunch checks the VS Code extension's launch
// attributes (docs/editors/vscode-ndbg/package.json) against the launch
// arguments the adapter reads (launchArgs, parseLaunch): the same names,
// of the JSON type of each field, required exactly where parseLaunch
// refuses an absent one, every enum value accepted and every other one
// refused, every default the adapter's own. The manifest made call
// required, allowed only device cpu and lacked verifyBelow and noExec.
// docs/editors/launch.json's configurations must launch too.
func TestVSCodeManifestMatchesLaunch(t *testing.T) {
	data, err := os.ReadFile("../../docs/editors/vscode-ndbg/package.json")
	require.NoError(t, err)
	var pkg struct {
		Contributes struct {
			Debuggers []struct {
				Type                    string
				ConfigurationAttributes struct {
					Launch struct {
						Required   []string
						Properties map[string]struct {
							Type    string
							Enum    []string
							Default any
						}
					}
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(data, &pkg))
	require.Len(t, pkg.Contributes.Debuggers, 1)
	launch := pkg.Contributes.Debuggers[0].ConfigurationAttributes.Launch

	// The adapter's fields, by JSON name, with their JSON types.
	fields := map[string]string{}
	typ := reflect.TypeOf(launchArgs{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		fields[name] = map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Float64: "number"}[f.Type.Kind()]
		require.NotEmpty(t, fields[name], "a launch field of a kind the test does not map: %s", f.Name)
	}
	var props []string
	for name, p := range launch.Properties {
		props = append(props, name)
		assert.Equal(t, fields[name], p.Type, "%s's type", name)
	}
	var want []string
	for name := range fields {
		want = append(want, name)
	}
	slices.Sort(props)
	slices.Sort(want)
	require.Equal(t, want, props, "the manifest's launch attributes are the adapter's")

	// Required: exactly the fields without which parseLaunch refuses a
	// launch that is otherwise valid (the real backend, which needs no call).
	full := map[string]any{"program": "p.py", "call": "f(1)", "backend": "real"}
	var required []string
	for name := range fields {
		args := map[string]any{}
		for k, v := range full {
			if k != name {
				args[k] = v
			}
		}
		raw, _ := json.Marshal(args)
		if _, err := parseLaunch(raw); err != nil {
			required = append(required, name)
		}
	}
	slices.Sort(required)
	assert.Equal(t, required, launch.Required)

	// Enums: each value launches; a value outside is refused.
	enums := map[string][]string{"backend": {backendNeural, backendReal, backendCompare}, "device": strings.Split(device.Names, "|")}
	for name, p := range launch.Properties {
		if p.Enum == nil {
			continue
		}
		assert.ElementsMatch(t, enums[name], p.Enum, "%s's values", name)
		for _, v := range append(slices.Clone(p.Enum), "nonsense") {
			raw, _ := json.Marshal(map[string]any{"program": "p.py", "call": "f(1)", name: v})
			_, err := parseLaunch(raw)
			if v == "nonsense" {
				assert.Error(t, err, "%s %q", name, v)
			} else {
				assert.NoError(t, err, "%s %q", name, v)
			}
		}
	}
	// Defaults: what the adapter does with the field absent.
	raw, _ := json.Marshal(map[string]any{"program": "p.py", "call": "f(1)"})
	absent, err := parseLaunch(raw)
	require.NoError(t, err)
	byName := map[string]any{}
	v := reflect.ValueOf(absent)
	for i := range typ.NumField() {
		byName[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = v.Field(i).Interface()
	}
	for name, p := range launch.Properties {
		if p.Default == nil {
			continue
		}
		got := byName[name]
		if f, ok := got.(float64); ok {
			assert.InDelta(t, f, p.Default, 0, "%s's default", name)
		} else {
			assert.Equal(t, got, p.Default, "%s's default", name)
		}
	}

	// The example configurations launch.
	data, err = os.ReadFile("../../docs/editors/launch.json")
	require.NoError(t, err)
	var examples struct{ Configurations []json.RawMessage }
	require.NoError(t, json.Unmarshal(data, &examples))
	require.NotEmpty(t, examples.Configurations)
	for _, c := range examples.Configurations {
		_, err := parseLaunch(c)
		assert.NoError(t, err, "%s", c)
	}
}
