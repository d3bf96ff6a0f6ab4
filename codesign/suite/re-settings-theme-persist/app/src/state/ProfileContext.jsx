import { createContext, useContext, useMemo, useState } from "react";
import { initialProfile } from "../data/account.js";

const ProfileContext = createContext(null);

export function ProfileProvider({ children }) {
  const [profile, setProfile] = useState(initialProfile);
  const value = useMemo(() => ({ profile, saveProfile: setProfile }), [profile]);
  return <ProfileContext.Provider value={value}>{children}</ProfileContext.Provider>;
}

export function useProfile() {
  const value = useContext(ProfileContext);
  if (!value) throw new Error("useProfile must be used inside ProfileProvider");
  return value;
}
